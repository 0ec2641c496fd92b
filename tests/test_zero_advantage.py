"""Zero-advantage rows leave the GRPO update (``rlvr.lean_forward.zero_advantage``): the loss
and its gradient stay the whole batch's for every loss type it serves, in float64 (up to the attention
kernels' rounding, which differs with the batch's shape)."""

from __future__ import annotations

import pytest
import torch

from rlvr.lean_forward.zero_advantage import rows_with_gradient, skippable
from tests.support.grpo_batches import grouped_batch, grpo_trainer

PROMPT_WIDTH, COMPLETION_WIDTH, PROMPTS, GROUP = 16, 40, 6, 4
ROWS = PROMPTS * GROUP


def batch(advantages: torch.Tensor, off_policy: bool) -> dict:
    ids, mask = grouped_batch(3, PROMPTS, GROUP, PROMPT_WIDTH, COMPLETION_WIDTH)
    completion_mask = mask[:, PROMPT_WIDTH:]
    inputs = {
        "prompt_ids": ids[:, :PROMPT_WIDTH],
        "prompt_mask": mask[:, :PROMPT_WIDTH],
        "completion_ids": ids[:, PROMPT_WIDTH:],
        "completion_mask": completion_mask,
        "tool_mask": (torch.arange(COMPLETION_WIDTH) % 7 != 3).long().expand(ROWS, -1).clone(),
        "advantages": advantages,
        "num_items_in_batch": completion_mask.sum(),
    }
    if off_policy:  # old log-probs off the policy's, so the ratios move and some clip
        noise = torch.Generator().manual_seed(5)
        inputs["old_per_token_logps"] = -3.0 + torch.randn(
            ROWS, COMPLETION_WIDTH, generator=noise, dtype=torch.float64
        )
    return inputs


def loss_and_grads(trainer, inputs: dict, rows_seen: list[int]):
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer._compute_loss(trainer.model, dict(inputs))
    loss.backward()
    grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in trainer.model.parameters()]
    return loss.detach(), grads, sum(rows_seen)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo", "luspo", "cispo", "sapo", "vespo"])
def test_leaving_out_zero_advantage_rows_keeps_the_loss_and_gradient(loss_type, tiny_model_dir, tmp_path):
    """Half the groups all scored alike (advantage 0 on their rows): the update runs on the
    other half only, and the loss and gradient equal the whole batch's, on TRL's forward and
    on the lean one, with old log-probs off the policy's (ratios away from 1, some clipped)."""
    advantages = torch.linspace(-1, 1, ROWS, dtype=torch.float64)
    advantages[0:4] = advantages[12:16] = advantages[20:24] = 0.0
    inputs = batch(advantages, off_policy=True)
    for lean in (False, True):
        results = {}
        for skip in (False, True):
            trainer = grpo_trainer(
                tiny_model_dir,
                tmp_path / f"{lean}{skip}",
                ROWS,
                COMPLETION_WIDTH,
                lean,
                False,
                skip=skip,
                loss_type=loss_type,
                epsilon_high=0.28,
            )
            assert trainer.skip_zero_advantage is skip
            seen: list[int] = []
            trainer.model.register_forward_hook(
                lambda _m, args, kwargs, _o, seen=seen: seen.append(kwargs["input_ids"].size(0)),
                with_kwargs=True,
            )
            results[skip] = loss_and_grads(trainer, inputs, seen)
        (loss, grads, rows), (full_loss, full_grads, full_rows) = results[True], results[False]
        assert rows == ROWS - 12 and full_rows == ROWS, (rows, full_rows)
        torch.testing.assert_close(loss, full_loss, atol=1e-10, rtol=1e-7)
        assert any(g.norm() > 0 for g in full_grads)
        for a, b in zip(grads, full_grads, strict=True):  # attention kernels differ by batch shape
            assert (a - b).norm() <= 1e-6 * b.norm(), (loss_type, lean)


def test_a_batch_of_zero_advantages_runs_one_row_for_a_zero_loss(tiny_model_dir, tmp_path):
    trainer = grpo_trainer(tiny_model_dir, tmp_path, ROWS, COMPLETION_WIDTH, False, False)
    seen: list[int] = []
    trainer.model.register_forward_hook(
        lambda _m, args, kwargs, _o: seen.append(kwargs["input_ids"].size(0)), with_kwargs=True
    )
    loss, grads, rows = loss_and_grads(trainer, batch(torch.zeros(ROWS, dtype=torch.float64), False), seen)
    assert rows == 1 and loss.item() == 0.0
    assert all(g.abs().max() == 0 for g in grads)
    assert trainer.update_facts()["rows_skipped"] == ROWS - 1


def test_rows_stay_where_a_term_has_gradient_on_every_row(tiny_model_dir, tmp_path):
    kept = grpo_trainer(tiny_model_dir, tmp_path / "kl", ROWS, COMPLETION_WIDTH, False, False, beta=0.04)
    assert not kept.skip_zero_advantage and "KL" in kept.update_facts()["zero_advantage_kept_because"]
    masked = grpo_trainer(
        tiny_model_dir, tmp_path / "q", ROWS, COMPLETION_WIDTH, False, False, top_entropy_quantile=0.2
    )
    assert "quantile" in skippable(masked)
    off = grpo_trainer(tiny_model_dir, tmp_path / "off", ROWS, COMPLETION_WIDTH, False, False, skip=False)
    assert off.update_facts()["zero_advantage_kept_because"] == "trainer.skip_zero_advantage=false"


def test_unknown_fields_and_per_token_advantages_keep_every_row():
    advantages = torch.tensor([0.0, 1.0])
    base = {"advantages": advantages, "completion_mask": torch.ones(2, 3)}
    assert rows_with_gradient(base, "dapo").rows.tolist() == [1]
    assert rows_with_gradient({**base, "pixel_values": torch.ones(2, 3)}, "dapo") is None
    per_token = {**base, "advantages": torch.zeros(2, 3)}
    assert rows_with_gradient(per_token, "dapo") is None
    assert rows_with_gradient({**base, "advantages": torch.ones(2)}, "dapo") is None


def test_ranks_keep_as_many_rows_as_the_rank_that_keeps_most():
    """TRL gathers per-row metrics across ranks: every rank keeps the largest count, padding
    with zero-advantage rows (which add nothing), and the loss is scaled by what it keeps."""
    base = {"advantages": torch.tensor([0.0, 0.5, 0.0, 0.0]), "completion_mask": torch.ones(4, 2)}
    kept = rows_with_gradient(base, "grpo", most_over_ranks=lambda n: max(n, 3))
    assert kept.rows.tolist() == [0, 1, 2] and kept.scale == 3 / 4
    assert rows_with_gradient(base, "grpo", most_over_ranks=lambda n: 4) is None
