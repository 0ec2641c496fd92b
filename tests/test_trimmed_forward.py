"""GRPO's log-prob forward in length-sorted, padding-trimmed chunks (rlvr.lean_forward.trimmed)."""

from __future__ import annotations

import random

import pytest
import torch

from rlvr.lean_forward.trimmed import chunked_logps, plan_chunks, trimmable
from tests.support.grpo_batches import grouped_batch, grpo_trainer, padded_batch


@pytest.mark.parametrize("seed", range(6))
def test_every_row_lands_in_one_chunk_holding_all_its_real_tokens(seed):
    rng = random.Random(seed)
    rows, prompt_width = rng.randint(1, 70), rng.randint(1, 40)
    ids, mask = padded_batch(seed, rows, prompt_width, rng.randint(1, 60))
    max_rows = rng.choice([None, 3, 16])
    chunks = plan_chunks(mask, prompt_width, max_rows)
    seen = torch.cat([c.rows for c in chunks])
    assert sorted(seen.tolist()) == list(range(rows))
    for chunk in chunks:
        assert chunk.start <= prompt_width - 1 < prompt_width < chunk.stop <= ids.size(1)
        assert max_rows is None or chunk.rows.numel() <= max_rows
        outside = mask[chunk.rows].clone()
        outside[:, chunk.start : chunk.stop] = 0
        assert not outside.any()  # no real token is cut off


def test_a_mixed_batch_is_cut_into_chunks_that_drop_most_padding():
    # 192 short rows (math-like) and 64 long ones (agent-like), shuffled
    prompt_width, completion_width = 60, 140
    mask = torch.zeros(256, prompt_width + completion_width, dtype=torch.long)
    mask[:192, prompt_width - 12 : prompt_width + 30] = 1
    mask[192:, : prompt_width + completion_width] = 1
    mask = mask[torch.randperm(256, generator=torch.Generator().manual_seed(0))]
    chunks = plan_chunks(mask, prompt_width)
    padded = sum(c.rows.numel() * (c.stop - c.start) for c in chunks)
    assert len(chunks) == 2  # the short rows, then the long ones
    assert padded == mask.sum()  # nothing but real tokens


def logps_and_entropy(model):
    """A plain forward standing in for TRL's fused head: the log-prob of each kept token and
    the entropy of the distribution that predicted it."""

    def forward(ids, mask, kept, groups=None):
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -kept - 1 : -1]
        logp = torch.log_softmax(logits.float(), dim=-1)
        token = logp.gather(-1, ids[:, -kept:, None]).squeeze(-1)
        return token, -(logp.exp() * logp).sum(-1), None

    return forward


@pytest.mark.parametrize("seed", range(3))
def test_trimmed_chunks_give_the_padded_forwards_log_probs_and_gradients(tiny_model_dir, seed):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert trimmable(model)
    prompt_width, completion_width = 30, 50
    ids, mask = padded_batch(seed, 40, prompt_width, completion_width)
    forward = logps_and_entropy(model)
    real = mask[:, prompt_width:].bool()

    full, full_entropy, _ = forward(ids, mask, completion_width)
    loss_full = (full * real).sum()
    grads_full = torch.autograd.grad(loss_full, list(model.parameters()))

    ours, ours_entropy, extras = chunked_logps(forward, ids, mask, completion_width)
    assert len(extras) > 1  # the batch was cut
    torch.testing.assert_close(ours[real], full[real], atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(ours_entropy[real], full_entropy[real], atol=2e-5, rtol=1e-4)
    grads_ours = torch.autograd.grad((ours * real).sum(), list(model.parameters()))
    for a, b in zip(grads_ours, grads_full, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


def test_absolute_position_models_stay_on_the_padded_forward():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, bos_token_id=0)
    config.eos_token_id = 0
    assert not trimmable(GPT2LMHeadModel(config))


def test_the_grpo_loss_and_gradient_are_unchanged_by_trimming_and_shared_prompts(tiny_model_dir, tmp_path):
    """TRL's own loss over one GRPO batch (8 prompts x 4 completions), with the policy forward
    trimmed, sharing prompts, both, and neither (TRL's path): the same loss and the same
    gradient (with one update per batch the loss value alone is blind to the log-probs; the
    gradient is not). In float64: the gradient sums per-token terms of both signs, so float32's
    rounding, different for different shapes, leaves a 1% difference."""
    prompt_width, completion_width, rows = 24, 60, 32
    ids, mask = grouped_batch(7, 8, 4, prompt_width, completion_width)
    inputs = {
        "prompt_ids": ids[:, :prompt_width],
        "prompt_mask": mask[:, :prompt_width],
        "completion_ids": ids[:, prompt_width:],
        "completion_mask": mask[:, prompt_width:],
        "advantages": torch.linspace(-1, 1, rows, dtype=torch.float64),
        "num_items_in_batch": mask[:, prompt_width:].sum(),
    }
    losses, grads, forwards = {}, {}, {}
    for trim, share in [(False, False), (True, False), (False, True), (True, True)]:
        trainer = grpo_trainer(tiny_model_dir, tmp_path / f"{trim}{share}", rows, completion_width, trim, share)
        assert (trainer._lean_forward is None) == (not trim and not share)
        calls: list[dict] = []
        trainer.model.register_forward_hook(
            lambda module, args, kwargs, out, seen=calls: seen.append(kwargs), with_kwargs=True
        )
        loss = trainer._compute_loss(trainer.model, dict(inputs))
        loss.backward()
        losses[trim, share] = loss
        grads[trim, share] = [p.grad.clone() for p in trainer.model.parameters()]
        forwards[trim, share] = calls
    assert len(forwards[False, False]) == 1
    assert len(forwards[True, False]) > 1  # cut into chunks
    assert len(forwards[False, True]) == 2  # the 8 prompts once, then the 32 completions
    assert forwards[False, True][0]["input_ids"].size(0) == 8
    both = forwards[True, True]  # trimmed prompts encoded once, then trimmed completions
    assert both[0]["input_ids"].size(0) == 8 and both[0]["input_ids"].size(1) < prompt_width - 1
    assert both[1]["cache"] is not None
    for key in [(True, False), (False, True), (True, True)]:
        torch.testing.assert_close(losses[key], losses[False, False], atol=1e-9, rtol=1e-7)
        for a, b in zip(grads[key], grads[False, False], strict=True):
            assert (a - b).norm() <= 1e-5 * b.norm(), key


def test_group_ids_find_the_same_distinct_prompts_as_comparing_columns():
    """The lean forward groups a batch's prompts once and hands each chunk its rows' group ids;
    the prompts picked from those ids must rebuild every row's prompt, as comparing the prompt
    columns does, whatever order the chunk holds its rows in."""
    from rlvr.lean_forward.shared_prompt import _distinct_prompts

    prompt_width = 12
    ids, mask = grouped_batch(3, 6, 4, prompt_width, 5)
    prompts = torch.cat([ids[:, :prompt_width], mask[:, :prompt_width]], dim=1)
    groups = torch.unique(prompts, dim=0, return_inverse=True)[1]
    rows = torch.randperm(len(ids), generator=torch.Generator().manual_seed(0))[:17]
    by_columns, columns_index = _distinct_prompts(prompts[rows], None)
    by_ids, ids_index = _distinct_prompts(prompts[rows], groups[rows] * 10 + 3)
    assert len(by_ids) == len(by_columns) == len(torch.unique(groups[rows]))
    assert torch.equal(by_ids[ids_index], prompts[rows])
    assert torch.equal(by_columns[columns_index], prompts[rows])


@pytest.mark.slow
@pytest.mark.parametrize("sharding", ["fsdp2", "ddp"])
def test_two_ranks_planning_different_chunk_counts_get_trls_loss_and_gradient(
    sharding, tiny_model_dir, rlvr_cache, tmp_path
):
    """Two real processes (gloo), the model prepared by accelerate: FSDP2 (through
    ``tests.support.fsdp_on_cpu``) or DDP. One rank's batch is one chunk, the other's several;
    both ranks run as many forwards (stand-ins make up the difference), and the loss and the
    gathered gradient equal TRL's padded forward's on each rank."""
    from test_gpu_configs import free_port
    from test_multiprocess import launch_env

    from tests.support.two_ranks import run_two_ranks

    done = run_two_ranks(
        "tests.support.lean_two_ranks",
        [str(tiny_model_dir), str(tmp_path)],
        launch_env(rlvr_cache),
        free_port(),
        fsdp=sharding == "fsdp2",
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    ranks = torch.load(tmp_path / "result.pt", weights_only=False)
    assert [r["chunks"] for r in ranks] == [1, 2]  # the ranks' own plans differ
    assert [r["lean"]["forwards"] for r in ranks] == [2, 2]  # one stand-in on rank 0
    assert [r["trl"]["forwards"] for r in ranks] == [1, 1]
    for r in ranks:
        assert r["trl"]["grads"][0].dtype == torch.float64
        torch.testing.assert_close(r["lean"]["loss"], r["trl"]["loss"], atol=1e-9, rtol=1e-7)
        for a, b in zip(r["lean"]["grads"], r["trl"]["grads"], strict=True):
            assert (a - b).norm() <= 1e-5 * b.norm()
        assert any(g.norm() > 0 for g in r["trl"]["grads"])
