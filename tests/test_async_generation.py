"""One-step-ahead generation (trainer.async_generation): the seeded sampler, the copy's weight
sync, the settings it refuses, and real GRPO runs on the tiny model that report staleness and
resume exactly."""

from __future__ import annotations

import json

import pytest
import torch
from test_config import compose_run, hydra_context  # noqa: F401 (the Hydra context fixture)
from test_lora import guessing_model
from test_resume import finish, kill, records, run_dir, start, wait_for_checkpoint

from rlvr.config import ConfigError
from rlvr.rollouts.lookahead import Lookahead, Sampling, sample
from rlvr.training.checkpoints import latest_complete_checkpoint

ASYNC = ["domains=[science]", "algo.prompts_per_step=2", "trainer.async_generation=true"]


@pytest.fixture(scope="module")
def policy(tmp_path_factory, rlvr_cache):
    from transformers import AutoModelForCausalLM

    start = tmp_path_factory.mktemp("lookahead") / "start"
    return AutoModelForCausalLM.from_pretrained(guessing_model(rlvr_cache, start))


def settings(model, **kw) -> Sampling:
    base = dict(
        max_new_tokens=6,
        temperature=1.0,
        top_p=1.0,
        eos_token_ids=(model.config.eos_token_id,),
        pad_token_id=0,
        seed=3,
    )
    return Sampling(**{**base, **kw})


PROMPTS = [[5, 9, 12, 40], [7, 7], [30, 31, 32, 33, 34, 35]]  # unequal: left padding is exercised


def test_sampling_is_seeded_and_its_logprobs_are_the_policys(policy):
    cfg = settings(policy)
    ids, logps = sample(policy, PROMPTS, cfg, seed=11)
    assert (ids, logps) == sample(policy, PROMPTS, cfg, seed=11)
    assert ids != sample(policy, PROMPTS, cfg, seed=12)[0]
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    sample(policy, PROMPTS, cfg, seed=11)
    assert torch.equal(torch.rand(1), before), "sampling moved torch's global generator"
    for prompt, completion, lp in zip(PROMPTS, ids, logps, strict=True):
        assert 1 <= len(completion) == len(lp) <= cfg.max_new_tokens
        assert all(t != cfg.eos_token_ids[0] for t in completion[:-1])  # cut at the first end
        # the log-probs the trainer would compute with one full forward of the same weights
        full = torch.tensor([prompt + completion])
        with torch.no_grad():
            logits = policy(full).logits[0, len(prompt) - 1 : -1].float()
        want = torch.log_softmax(logits, -1).gather(1, torch.tensor(completion)[:, None])
        assert torch.allclose(torch.tensor(lp), want.squeeze(1), atol=1e-4)


def test_top_p_keeps_the_nucleus_only(policy):
    from rlvr.evaluation.sampling import nucleus as _nucleus

    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    assert torch.equal(_nucleus(probs, 0.7) > 0, torch.tensor([[True, True, False, False]]))
    assert torch.equal(_nucleus(probs, 1.0), probs)
    ids, _ = sample(policy, PROMPTS, settings(policy, top_p=1e-6), seed=1)  # greedy in effect
    assert ids == sample(policy, PROMPTS, settings(policy, top_p=1e-6), seed=2)[0]


def test_copy_follows_the_live_weights_only_when_synced(policy):
    import copy

    live = copy.deepcopy(policy)
    ahead = Lookahead(live, settings(live))
    try:
        ahead.sync(live, 0)
        first = ahead.sample_now(PROMPTS, step=0)
        with torch.no_grad():
            for p in live.parameters():
                p.add_(torch.randn_like(p))  # an update the copy has not seen
        assert ahead.sample_now(PROMPTS, step=0).completion_ids == first.completion_ids
        ahead.sync(live, 1)
        moved = ahead.sample_now(PROMPTS, step=0)
        assert (moved.version, first.version) == (1, 0)
        assert moved.logprobs != first.logprobs  # new weights, same seed and prompts
        ahead.submit(PROMPTS, step=1)
        assert ahead.take([[1, 2, 3]]) is None  # a batch for other prompts is not served
    finally:
        ahead.close()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["trainer.use_vllm=true"], "needs trainer.use_vllm=false.*trl vllm-serve"),
        (["algo.num_iterations=2"], "needs algo.num_iterations=1"),
        (["domains=[math,agent]"], "needs no agent domain"),
    ],
)
def test_async_generation_refuses_what_it_cannot_run(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose_run("trainer.async_generation=true", *overrides)


def metrics(folder) -> list[dict]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [m for m in map(json.loads, lines) if "loss" in m]


@pytest.mark.slow
def test_async_run_reports_staleness_and_keeps_the_data_order(tmp_path):
    """Ten science rows, two prompts a step: a pass is five steps, so step 6 starts a new pass
    (its batch cannot be seen early and is sampled in step). Two accumulation steps."""
    cache = tmp_path / "cache"
    common = [
        "domains=[science]",
        "algo.prompts_per_step=2",
        "trainer.gradient_accumulation_steps=2",
        f"init_from={guessing_model(cache, tmp_path / 'start')}",
    ]
    roots = {"async": tmp_path / "async", "sync": tmp_path / "sync"}
    runs = {
        "async": start(roots["async"], cache, *common, "trainer.async_generation=true"),
        "sync": start(roots["sync"], cache, *common),
    }  # side by side: a core each
    for name, proc in runs.items():
        finish(proc, roots[name])
    folder = run_dir(roots["async"])

    steps = metrics(folder)
    assert [m["async/staleness"] for m in steps] == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    assert all(m["async/wait_s"] >= 0 for m in steps)
    assert any(m["clip_ratio/region_mean"] is not None for m in steps)
    summary = json.loads((folder / "summary.json").read_text())
    facts = summary["rl"]["generation"]
    assert facts["async_generation"] and facts["batches"] == 6
    assert (facts["staleness_max"], facts["staleness_mean"]) == (1, pytest.approx(4 / 6))
    assert summary["compute"]["generation_placement"] == "colocate"
    assert summary["compute"]["generation_server_devices"] == 0
    assert "async/staleness" not in metrics(run_dir(roots["sync"]))[0]
    # generating ahead changes when a batch is sampled, never which prompts a step trains on
    assert records(folder) == records(run_dir(roots["sync"]))


@pytest.mark.slow
def test_killed_async_run_resumes_with_its_batch_held_ahead(tmp_path):
    cache = tmp_path / "cache"
    overrides = [*ASYNC, f"init_from={guessing_model(cache, tmp_path / 'start')}"]
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"
    # the uninterrupted run goes beside the one to kill: tests run one at a time
    # on two cores, so each process gets a core of its own
    uninterrupted = start(straight_root, cache, *overrides)
    proc = start(broken_root, cache, *overrides)
    wait_for_checkpoint(broken_root, 2, proc)
    kill(proc)
    finish(uninterrupted, straight_root)
    folder = run_dir(broken_root)
    done = int(latest_complete_checkpoint(folder / "checkpoints").name.split("-")[1])
    assert done < 6, "the run finished before it could be killed"
    held = folder / "checkpoints" / f"checkpoint-{done}" / "lookahead-rank0.json"
    held = json.loads(held.read_text())
    assert (held["version"], held["step"]) == (done - 1, done)  # sampled one version back
    before = len(records(folder))
    finish(start(broken_root, cache, *overrides, "resume=true"), broken_root)

    resumed = metrics(folder)[-(6 - done) :]
    assert resumed[0]["step"] == done + 1
    assert resumed[0]["async/staleness"] == 1.0  # the saved batch, not one sampled afresh
    stitched = {r["step"]: r["ids"] for r in records(folder)[:before] if r["step"] <= done}
    stitched.update({r["step"]: r["ids"] for r in records(folder)[before:]})
    assert stitched == {r["step"]: r["ids"] for r in records(run_dir(straight_root))}
    from test_resume import final_weights_equal

    # same samples from the same seeds and weights, same updates: bit-identical (1 thread)
    assert final_weights_equal(run_dir(straight_root), folder)
