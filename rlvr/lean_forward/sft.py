"""SFT's loss over length-sorted chunks, each cut to the columns its rows use.

TRL's SFT pads every batch on the right to its longest example: on ``tiny_study``'s
demonstrations (agent examples carry a tool listing, others are short) half of each batch's
tokens are padding (2,013 real of 3,990 computed per step of 16). Here the rows are sorted by
length and cut into chunks by the lean GRPO forward's planner (``rlvr.lean_forward.trimmed``:
padded tokens plus a fixed cost a chunk, minimised exactly), each chunk keeps the columns up to
its longest row, and every chunk runs through TRL's fused LM head; the per-token losses are
summed and divided by the batch's label count (``num_items_in_batch``, as TRL does), so loss,
gradient, entropy and token accuracy are the padded batch's. Right-padded columns hold no real
token of any row of the chunk, and causal attention never looks right, so dropping them changes
nothing the kept tokens see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from rlvr.lean_forward.trimmed import CHUNK_OVERHEAD_TOKENS, plan_chunks


@dataclass(frozen=True)
class ChunkedLoss:
    """The batch's loss and what TRL's metrics read from its fused forward, summed."""

    loss: torch.Tensor
    label_tokens: torch.Tensor
    entropy_sum: torch.Tensor
    correct: torch.Tensor
    chunks: int


def chunked_sft_loss(
    model: Any,
    inputs: dict[str, Any],
    num_items_in_batch: Any,
    dft: bool = False,
    overhead_tokens: int = CHUNK_OVERHEAD_TOKENS["cpu"],
) -> ChunkedLoss | None:
    """TRL's SFT loss (nll, or dft's probability-weighted nll) from length-sorted chunks; None
    when the batch has nothing to trim (one chunk as wide as the batch: TRL's forward is it)."""
    mask = inputs["attention_mask"]
    rows, width = mask.shape
    chunks = plan_chunks(mask, 1, None, overhead_tokens)
    if len(chunks) == 1 and chunks[0].stop == width:
        return None
    total = label_tokens = entropy_sum = correct = None
    for chunk in chunks:
        part = {
            key: value[chunk.rows, : chunk.stop] if _per_token(value, rows, width) else value
            for key, value in inputs.items()
        }
        out = model(**part, fused_lm_head=True)
        per_token = -out.log_probs  # zero on ignored positions
        if dft:
            per_token = per_token * out.log_probs.exp().detach()
        sums = (
            per_token.sum(),
            out.label_mask.sum(),
            out.entropy.detach().sum(),
            out.is_top1.sum(),
        )
        if total is None:
            total, label_tokens, entropy_sum, correct = sums
        else:
            total, label_tokens = total + sums[0], label_tokens + sums[1]
            entropy_sum, correct = entropy_sum + sums[2], correct + sums[3]
    count = label_tokens if num_items_in_batch is None else num_items_in_batch
    loss = total / torch.as_tensor(count).clamp(min=1)
    return ChunkedLoss(loss, label_tokens, entropy_sum, correct, len(chunks))


def _per_token(value: Any, rows: int, width: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[:2] == (rows, width)
