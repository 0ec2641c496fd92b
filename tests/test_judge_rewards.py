"""The judge inside rlvr: the embedded model judging in-process, judge errors in the reward bridge's
error accounting, fail-fast setup in the scorer, and the judged domain configs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rlvr.config import RunConfig, validate
from rlvr.rewards.bridge import (
    ErrorBudget,
    StepTimer,
    VerifierInfrastructureError,
    build_reward_functions,
)
from rlvr.rewards.scoring import build_scorer
from tests.support.chat_server import ChatServer
from verifiers import ReasoningFormat, Status, get_verifier
from verifiers.judge.backend import JudgeSetupError

SHORT = "Task: {question}\nResponse: {completion}\nScore 0-10:"
REF = {"question": "Compute 6+5.", "answer": "11"}


def _train_constant_reply(src: Path, out: Path, reply: str, steps: int = 60) -> Path:
    """The embedded tiny model fine-tuned to answer every judge prompt with ``reply``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(src)
    tok = AutoTokenizer.from_pretrained(src)
    rng = random.Random(0)
    examples = []
    for _ in range(16):
        a, b = rng.randint(0, 9), rng.randint(0, 9)
        text = SHORT.format(question=f"Compute {a}+{b}.", completion=str(rng.randint(0, 20)))
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        p = tok(prompt, add_special_tokens=False)["input_ids"]
        r = tok(reply + "<|im_end|>", add_special_tokens=False)["input_ids"]
        examples.append((p + r, [-100] * len(p) + r))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for step in range(steps):
        batch = [examples[(4 * step + j) % len(examples)] for j in range(4)]
        width = max(len(ids) for ids, _ in batch)
        pad = [width - len(ids) for ids, _ in batch]
        ids = torch.tensor([[tok.pad_token_id] * n + x for n, (x, _) in zip(pad, batch, strict=True)])
        labels = torch.tensor([[-100] * n + y for n, (_, y) in zip(pad, batch, strict=True)])
        mask = (torch.arange(width)[None, :] >= torch.tensor(pad)[:, None]).long()
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def score_8_judge(tmp_path_factory, tiny_model_dir) -> Path:
    out = tmp_path_factory.mktemp("judge") / "score8"
    return _train_constant_reply(tiny_model_dir, out, "Score: 8")


def hf_judge(model: Path | str, **hf):
    options = {"model": str(model), "max_new_tokens": 10, **hf}
    return get_verifier("judge", backend="hf", hf=options, rubric=SHORT)


def test_the_embedded_model_judges_in_process_and_its_scores_are_cached(score_8_judge):
    verifier = hf_judge(score_8_judge)
    completions = ["11", "The sum is 11.", "12"]
    verdicts = verifier.verify_many(completions, [REF] * 3)
    assert [(v.status, v.score, v.extracted) for v in verdicts] == [(Status.CORRECT, 0.8, "8")] * 3
    assert verifier.stats.judge_calls == 3
    assert verifier.verify("12", REF) == verdicts[2]
    assert (verifier.stats.cache_hits, verifier.stats.judge_calls) == (1, 3)


def test_an_untrained_judge_gives_error_verdicts_never_zeros(tiny_model_dir):
    verifier = hf_judge(tiny_model_dir)
    verdict = verifier.verify("11", REF)
    assert verdict.status is Status.ERROR and "unparseable judge reply" in verdict.details
    assert verifier.stats.unparseable == 1


def test_judge_generation_past_its_time_limit_is_an_error(tiny_model_dir):
    verdict = hf_judge(tiny_model_dir, timeout_s=1e-4, max_new_tokens=64).verify("11", REF)
    assert verdict.status is Status.ERROR and "timeout_s" in verdict.details


@pytest.mark.parametrize(
    ("hf", "message"),
    [
        ({"model": "/no/such/judge"}, "neither an existing folder nor a Hub id"),
        ({"model": "org/judge-not-cached"}, "not in the local Hugging Face cache"),
        ({"max_new_tokens": 0}, "max_new_tokens and batch_size >= 1"),
        ({"temperature": 0.7}, "unexpected keyword argument 'temperature'"),
    ],
)
def test_bad_hf_judge_setup_fails_at_construction(hf, message):
    with pytest.raises(JudgeSetupError) as err:
        hf_judge(hf.pop("model", "tiny"), **hf)
    assert message in str(err.value)


@pytest.fixture
def server():
    with ChatServer() as s:
        yield s


def judge_options(url: str) -> dict:
    return {"judge": {"backend": "openai", "openai": {"base_url": url}, "rubric": SHORT}}


def reward_kwargs(n: int) -> dict:
    from tasks.registry import load_task_rows

    rows = load_task_rows("judged_micro_math", limit=n, seed=0)
    return {c: [r[c] for r in rows] for c in ("domain", "reference", "verifier", "id")}


def test_judge_errors_are_counted_by_the_reward_bridge_and_abort_above_the_rate(server):
    scorer = build_scorer(ReasoningFormat(), judge_options(server.base_url), 1, 10.0)
    budget = ErrorBudget(max_rate=0.25, min_samples=4)
    (reward,) = build_reward_functions(["math"], scorer, budget, StepTimer())
    kwargs = reward_kwargs(6)
    server.reply = lambda messages: "Score: 9"
    assert reward(None, ["11"] * 6, **kwargs) == pytest.approx([0.9] * 6)
    assert budget.errors["math"] == 0 and server.chat_requests == 6
    server.reply = lambda messages: "looks fine to me"  # no score: errors, never 0.0
    with pytest.raises(VerifierInfrastructureError, match="math: 6/12 verifications failed"):
        reward(None, ["12"] * 6, **kwargs)
    assert budget.errors["math"] == 6


def test_the_scorer_fails_at_setup_when_the_judge_endpoint_is_down(server):
    url = server.base_url
    server.httpd.shutdown()
    server.httpd.server_close()
    with pytest.raises(JudgeSetupError, match="does not answer"):
        build_scorer(ReasoningFormat(), judge_options(url), 1, 10.0)


def _compose(*overrides: str) -> RunConfig:
    from rlvr.study.commands import compose

    cfg = compose([*overrides, "run_name=test"])
    run: RunConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    validate(run)
    return run


@pytest.mark.parametrize("domain", ["math", "science", "instruction"])
def test_a_judged_domain_trains_on_judge_rows_and_evaluates_with_its_verifier(domain, rlvr_cache):
    from rlvr.data.rows import build_domain_data
    from rlvr.rewards.options import verifier_options

    run = _compose(f"domains=[judged/{domain}]", "mixture.train_size=4", "mixture.heldout_size=2")
    data = build_domain_data(run)[domain]
    assert {r["verifier"] for r in data.train} == {"judge"}
    assert "judge" not in {r["verifier"] for r in data.heldout}
    reference = json.loads(data.train[0]["reference"])
    assert reference["question"] == data.train[0]["prompt"][-1]["content"]
    options = verifier_options(run)["judge"]
    assert options["backend"] == "openai" and "{completion}" in options["rubric"]
    assert options["hf"]["cache_dir"] == run.paths.cache_dir  # interpolated from paths
    judge = get_verifier("judge", **{**options, "backend": "hf"})  # the in-process switch
    assert judge.backend.identity.startswith("hf:")
