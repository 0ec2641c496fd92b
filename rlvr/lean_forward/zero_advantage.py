"""Rows whose advantage is zero left out of the update: they add nothing to its loss or gradient.

With no KL term (beta 0), no entropy bonus, no auxiliary loss and no quantile entropy mask,
every GRPO-family token loss is the advantage times a factor (the clipped ratio, or its soft or
truncated forms), so a completion whose group all scored alike (advantage exactly 0) adds
exactly 0 to the loss and to every gradient: its forward and backward are wasted work. On the
embedded study three in four agent groups and five in six math groups score all alike. Such
rows leave the micro-batch before the forward, and the loss is rescaled to the normaliser the
whole micro-batch would have had: loss types over a global token count (dapo, cispo, vespo)
need nothing, per-sequence means and dr_grpo's constant (grpo, sapo, luspo, dr_grpo) scale by
kept rows / rows, bnpo's token mean by kept tokens / tokens. The loss and its gradient are the
whole batch's; TRL's logged entropy and clip ratios become means over the rows trained on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.training import trl_seam

UNSCALED = frozenset({"dapo", "cispo", "vespo"})  # normalised by the generation batch's tokens
ROW_SCALED = frozenset({"grpo", "sapo", "luspo", "dr_grpo"})  # by this micro-batch's rows
TOKEN_SCALED = frozenset({"bnpo"})  # by this micro-batch's tokens
PER_ROW = frozenset(
    {
        "prompt_ids",
        "prompt_mask",
        "completion_ids",
        "completion_mask",
        "tool_mask",
        "advantages",
        "old_per_token_logps",
        "ref_per_token_logps",
        "sampling_per_token_logps",
        "importance_sampling_ratio",
    }
)
SHARED = frozenset({"num_items_in_batch"})  # the same for every row: kept as it is


@dataclass(frozen=True)
class Kept:
    """The rows to run (their positions in the micro-batch) and the loss's rescaling."""

    rows: torch.Tensor
    scale: float | torch.Tensor

    def take(self, inputs: dict[str, Any]) -> dict[str, Any]:
        return {k: v if k in SHARED else v[self.rows] for k, v in inputs.items()}


def skippable(trainer: Any) -> str | None:
    """Why zero-advantage rows must stay in this trainer's update (None: they can leave)."""
    if trainer.beta != 0.0:
        return "a KL term (beta > 0) has a gradient on every row"
    if trl_seam.entropy_bonus_on(trainer):
        return "an entropy bonus has a gradient on every row"
    if trainer.aux_loss_enabled:
        return "an auxiliary loss"
    if trainer.top_entropy_quantile < 1.0:
        return "the entropy mask's quantile is taken over every row"
    if trainer.off_policy_mask_threshold is not None:
        return "an off-policy mask"
    if trainer.loss_type not in UNSCALED | ROW_SCALED | TOKEN_SCALED:
        return f"loss_type {trainer.loss_type!r}"
    return None


def rows_with_gradient(
    inputs: dict[str, Any], loss_type: str, most_over_ranks: Callable[[int], int] | None = None
) -> Kept | None:
    """The micro-batch's rows with a nonzero advantage, or None when every row has one or the
    inputs hold fields not known to be per row (images, say). A micro-batch of zero-advantage
    rows keeps one, so each rank still runs a forward and a backward and the loss is an exact
    zero with a gradient graph. With several processes (``most_over_ranks``: the largest count
    over the ranks) every rank keeps as many rows, adding zero-advantage ones: TRL gathers
    per-row metrics, and the collectives need equal shapes."""
    advantages = inputs["advantages"]
    if advantages.dim() != 1 or not set(inputs) <= PER_ROW | SHARED:
        return None
    keep = advantages != 0
    rows, nonzero = keep.numel(), int(keep.sum())
    kept = max(1, nonzero)
    if most_over_ranks is not None:
        kept = most_over_ranks(kept)
    if kept >= rows:
        return None
    spare = (~keep).nonzero().squeeze(1)[: kept - nonzero]
    keep[spare] = True
    index = keep.nonzero().squeeze(1)
    if loss_type in UNSCALED:
        return Kept(index, 1.0)
    if loss_type in ROW_SCALED:
        return Kept(index, kept / rows)
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:
        mask = mask * inputs["tool_mask"]
    return Kept(index, mask[index].sum().clamp(min=1.0) / mask.sum().clamp(min=1.0))
