"""The policy's log-prob forward in length-sorted chunks, each cut to the columns its rows use.

TRL scores a GRPO batch as one tensor padded on the left to its longest prompt and on the right
to its longest completion, so in a mixed batch every math row pays for the longest agent
episode (measured on ``tiny_study``'s mixed arm: completions of 42 tokens on average padded to
139, prompts of a few dozen padded to the tool-listing agent prompt). Sorting the rows by length,
cutting them into a few chunks and slicing each chunk to the columns that hold a real token in
at least one of its rows gives the same log-probs and entropies for every real token: a column
dropped is padding in every row of its chunk, which attention masks anyway, and rotary position
embeddings depend only on the distance between two tokens, so dropping leading columns shifts
every position of a row by the same amount and changes no attention score. Models with absolute
position embeddings would see different positions; ``trimmable`` keeps them on TRL's path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

# A chunk's fixed cost (one more forward and backward: Python, kernel launches, the LM head's
# setup) in tokens of padded work it must save to pay for itself: estimates, a few milliseconds
# against the per-token cost of a tiny model on a CPU core, and of a billion-parameter model on
# a GPU, where a launch-bound forward costs as much as many thousand tokens.
CHUNK_OVERHEAD_TOKENS = {"cpu": 256, "other": 16384}

Forward = Callable[
    [torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor | None, object]
]


@dataclass(frozen=True)
class Chunk:
    rows: torch.Tensor  # indices into the batch
    start: int  # first column kept
    stop: int  # one past the last column kept


def trimmable(model: torch.nn.Module) -> bool:
    """Whether dropping all-padding leading columns keeps every attention score (rotary models)."""
    config = getattr(model, "config", None)
    text = getattr(config, "text_config", None) or config
    return any(
        getattr(text, key, None) is not None
        for key in ("rope_theta", "rope_parameters", "rope_scaling")
    )


def plan_chunks(
    attention_mask: torch.Tensor,
    prompt_width: int,
    max_rows: int | None = None,
    overhead_tokens: int = CHUNK_OVERHEAD_TOKENS["cpu"],
) -> list[Chunk]:
    """Rows sorted by the span of their real tokens, cut into consecutive chunks that minimise
    the padded tokens computed plus ``overhead_tokens`` a chunk (an exact dynamic programme over
    the sorted rows). A chunk keeps the columns from its earliest real token to its latest, at
    least the prompt's last column (it predicts the first completion token) and one completion
    column."""
    real = attention_mask.bool()
    rows, width = real.shape
    has_any = real.any(dim=1)
    first = torch.where(has_any, real.int().argmax(dim=1), prompt_width - 1)
    last = torch.where(has_any, width - 1 - real.flip(1).int().argmax(dim=1), prompt_width)
    first, last = first.clamp(max=prompt_width - 1), last.clamp(min=prompt_width)
    order = torch.argsort(last - first, stable=True)
    lo_of, hi_of = first[order].tolist(), last[order].tolist()
    limit = max_rows or rows
    # cost[j]: the cheapest cut of the first j sorted rows; cut_at[j]: where its last chunk starts
    cost, cut_at = [0] + [float("inf")] * rows, [0] * (rows + 1)
    for j in range(1, rows + 1):
        lo, hi = width, -1
        for i in range(j - 1, max(j - limit, 0) - 1, -1):  # the last chunk is rows i..j-1
            lo, hi = min(lo, lo_of[i]), max(hi, hi_of[i])
            total = cost[i] + (j - i) * (hi - lo + 1) + overhead_tokens
            if total < cost[j]:
                cost[j], cut_at[j] = total, i
    chunks, j = [], rows
    while j > 0:
        part = order[cut_at[j] : j]
        chunks.append(Chunk(part, int(first[part].min()), int(last[part].max()) + 1))
        j = cut_at[j]
    return chunks[::-1]


def chunked_logps(
    forward: Forward,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    max_rows: int | None = None,
    overhead_tokens: int = CHUNK_OVERHEAD_TOKENS["cpu"],
) -> tuple[torch.Tensor, torch.Tensor | None, list]:
    """``forward`` over each chunk of ``plan_chunks``; per-token log-probs and entropies put
    back in the batch's row order and padded to ``logits_to_keep`` columns with zeros (those
    positions are padding, masked by the loss). Also returns each chunk's third output."""
    prompt_width = input_ids.size(1) - logits_to_keep
    chunks = plan_chunks(attention_mask, prompt_width, max_rows, overhead_tokens)
    logps, entropies, extras = [], [], []
    for chunk in chunks:
        ids = input_ids[chunk.rows, chunk.start : chunk.stop]
        mask = attention_mask[chunk.rows, chunk.start : chunk.stop]
        kept = chunk.stop - prompt_width
        chunk_logps, chunk_entropies, extra = forward(ids, mask, kept)
        logps.append(F.pad(chunk_logps, (0, logits_to_keep - kept)))
        if chunk_entropies is not None:
            entropies.append(F.pad(chunk_entropies, (0, logits_to_keep - kept)))
        extras.append(extra)
    inverse = torch.argsort(torch.cat([c.rows for c in chunks]))
    all_logps = torch.cat(logps)[inverse]
    all_entropies = torch.cat(entropies)[inverse] if entropies else None
    return all_logps, all_entropies, extras
