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
``LeanForward`` is what the trainer calls: these chunks, each scored with its distinct prompts
encoded once (``rlvr.lean_forward.shared_prompt``).

Across ranks (FSDP2, DDP) every forward is a collective (FSDP's parameter gathers, DDP's buffer
broadcast), so every rank must run as many forwards as the others. Each rank plans its own
chunks, the ranks agree on the largest count, and a rank with fewer runs stand-in forwards (two
columns of one row) whose output enters the result times zero: the same values, but every
stand-in's backward runs too, so the gradient reductions also match in number and order.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

# A chunk's fixed cost (one more forward and backward: Python, kernel launches, the LM head's
# setup) in tokens of padded work it must save to pay for itself: estimates, a few milliseconds
# against the per-token cost of a tiny model on a CPU core, and of a billion-parameter model on
# a GPU, where a launch-bound forward costs as much as many thousand tokens.
CHUNK_OVERHEAD_TOKENS = {"cpu": 256, "other": 16384}

# (ids, mask, completion columns kept, the rows' prompt-group ids or None) -> (log-probs,
# entropies or None, anything else the forward returns)
Forward = Callable[
    [torch.Tensor, torch.Tensor, int, torch.Tensor | None],
    tuple[torch.Tensor, torch.Tensor | None, object],
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
    return any(getattr(text, key, None) is not None for key in ("rope_theta", "rope_parameters", "rope_scaling"))


def plan_chunks(
    attention_mask: torch.Tensor,
    prompt_width: int,
    max_rows: int | None = None,
    overhead_tokens: int = CHUNK_OVERHEAD_TOKENS["cpu"],
    groups: torch.Tensor | None = None,
) -> list[Chunk]:
    """Rows sorted by the span of their real tokens, cut into consecutive chunks that minimise
    the padded tokens computed plus ``overhead_tokens`` a chunk (an exact dynamic programme over
    the sorted rows). ``groups`` (a group id per row: the rows that share a prompt) keeps each
    group in one chunk, groups sorted by their span, unless a group alone exceeds ``max_rows``.
    A chunk keeps the columns from its earliest real token to its latest, at least the prompt's
    last column (it predicts the first completion token) and one completion column."""
    real = attention_mask.bool()
    rows, width = real.shape
    has_any = real.any(dim=1)
    first = torch.where(has_any, real.int().argmax(dim=1), prompt_width - 1)
    last = torch.where(has_any, width - 1 - real.flip(1).int().argmax(dim=1), prompt_width)
    first, last = first.clamp(max=prompt_width - 1), last.clamp(min=prompt_width)
    limit = max_rows or rows
    units = _units(first, last, groups, limit)
    lo_of = [int(first[u].min()) for u in units]
    hi_of = [int(last[u].max()) for u in units]
    size_of = [u.numel() for u in units]
    # cost[j]: the cheapest cut of the first j units; cut_at[j]: where its last chunk starts
    cost, cut_at = [0] + [float("inf")] * len(units), [0] * (len(units) + 1)
    for j in range(1, len(units) + 1):
        lo, hi, size = width, -1, 0
        for i in range(j - 1, -1, -1):  # the last chunk is units i..j-1
            lo, hi, size = min(lo, lo_of[i]), max(hi, hi_of[i]), size + size_of[i]
            if size > limit:
                break
            total = cost[i] + size * (hi - lo + 1) + overhead_tokens
            if total < cost[j]:
                cost[j], cut_at[j] = total, i
    chunks, j = [], len(units)
    while j > 0:
        part = torch.cat(units[cut_at[j] : j])
        chunks.append(Chunk(part, int(first[part].min()), int(last[part].max()) + 1))
        j = cut_at[j]
    return chunks[::-1]


def _units(first: torch.Tensor, last: torch.Tensor, groups: torch.Tensor | None, limit: int) -> list[torch.Tensor]:
    """What a chunk is cut from, in span order: each row, or each group of rows."""
    if groups is not None and int(torch.bincount(groups).max()) <= limit:
        members = [torch.nonzero(groups == g).flatten() for g in torch.unique(groups)]
        return sorted(members, key=lambda m: int(last[m].max() - first[m].min()))
    return list(torch.argsort(last - first, stable=True).split(1))


def chunked_logps(
    forward: Forward,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    max_rows: int | None = None,
    overhead_tokens: int = CHUNK_OVERHEAD_TOKENS["cpu"],
    groups: torch.Tensor | None = None,
    most_chunks: Callable[[int], int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, list]:
    """``forward`` over each chunk of ``plan_chunks``; per-token log-probs and entropies put
    back in the batch's row order and padded to ``logits_to_keep`` columns with zeros (those
    positions are padding, masked by the loss). Also returns each chunk's third output.
    ``forward`` receives each chunk's rows' ``groups`` (None without groups).
    ``most_chunks``: this rank's chunk count -> the largest over all ranks (several processes);
    the difference is made up with stand-in forwards that add exactly zero."""
    prompt_width = input_ids.size(1) - logits_to_keep
    chunks = plan_chunks(attention_mask, prompt_width, max_rows, overhead_tokens, groups)
    stand_ins = most_chunks(len(chunks)) - len(chunks) if most_chunks else 0
    logps, entropies, extras = [], [], []
    for chunk in chunks:
        ids = input_ids[chunk.rows, chunk.start : chunk.stop]
        mask = attention_mask[chunk.rows, chunk.start : chunk.stop]
        kept = chunk.stop - prompt_width
        chunk_groups = None if groups is None else groups[chunk.rows]
        chunk_logps, chunk_entropies, extra = forward(ids, mask, kept, chunk_groups)
        logps.append(F.pad(chunk_logps, (0, logits_to_keep - kept)))
        if chunk_entropies is not None:
            entropies.append(F.pad(chunk_entropies, (0, logits_to_keep - kept)))
        extras.append(extra)
    inverse = torch.argsort(torch.cat([c.rows for c in chunks]))
    all_logps = torch.cat(logps)[inverse]
    all_entropies = torch.cat(entropies)[inverse] if entropies else None
    if stand_ins:
        all_logps = all_logps + 0.0 * _stand_in_sum(forward, input_ids, prompt_width, stand_ins)
    return all_logps, all_entropies, extras


def _stand_in_sum(forward: Forward, input_ids: torch.Tensor, prompt_width: int, count: int) -> torch.Tensor:
    """The summed log-probs of ``count`` forwards over the batch's first row's last prompt
    column and first completion column, unmasked (finite: times zero it stays zero)."""
    ids = input_ids[:1, prompt_width - 1 : prompt_width + 1]
    mask = torch.ones_like(ids)
    return sum(forward(ids, mask, 1, None)[0].sum() for _ in range(count))


@dataclass(frozen=True)
class LeanForward:
    """TRL's per-token log-prob forward, in trimmed chunks (``trim``) and with each distinct
    prompt of a chunk encoded once (``share``); ``parent`` is TRL's own forward, used for any
    chunk that sharing does not fit."""

    trim: bool
    share: bool
    autocast: Callable[[], AbstractContextManager]
    most_chunks: Callable[[int], int] | None = None  # several ranks: agree on a chunk count

    def __call__(
        self,
        model: torch.nn.Module,
        parent: Callable,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None,
        compute_entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, None]:
        from rlvr.lean_forward.shared_prompt import shared_prompt_logps

        share = self.share and not _checkpointing(model)

        def forward(ids: torch.Tensor, mask: torch.Tensor, kept: int, groups=None):
            shared = share and shared_prompt_logps(model, ids, mask, kept, compute_entropy, self.autocast, groups)
            return shared or parent(model, ids, mask, kept, compute_entropy=compute_entropy)

        if self.trim:
            device = "cpu" if input_ids.device.type == "cpu" else "other"
            width = input_ids.size(1) - logits_to_keep
            prompts = torch.cat([input_ids[:, :width], attention_mask[:, :width]], dim=1)
            groups = torch.unique(prompts, dim=0, return_inverse=True)[1] if share else None
            logps, entropies, _ = chunked_logps(
                forward,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                CHUNK_OVERHEAD_TOKENS[device],
                groups,
                self.most_chunks,
            )
            return logps, entropies, None
        size = batch_size or input_ids.size(0)  # TRL's own chunks, in order, untrimmed
        parts = [
            forward(input_ids[i : i + size], attention_mask[i : i + size], logits_to_keep)
            for i in range(0, input_ids.size(0), size)
        ]
        entropies = torch.cat([p[1] for p in parts]) if compute_entropy else None
        return torch.cat([p[0] for p in parts]), entropies, None


def _checkpointing(model: torch.nn.Module) -> bool:
    """Activation checkpointing is on (the model then returns no KV cache in training)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name) or name in getattr(model, "__dict__", {}):
            return bool(getattr(model, name))
    return bool(getattr(model, "is_gradient_checkpointing", False))
