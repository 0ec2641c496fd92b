"""Rows of a batched KV cache: per-row prefill, suffix feeding and decoding on a cache that grows in place.

Row ``r`` holds its ``cached[r]`` tokens in the columns just before ``ends[r]``, padding to the
left of them; a row that sat a step out (its turn over, waiting for tools) has a stale column
after its end, masked for it. ``extend`` feeds each row its own next ids (a prompt, or a turn's
last id plus tool results) and leaves every row right-aligned and hole-free; ``decode`` feeds
one id per row. Rows are taken apart (``select``) and stacked again (``join``) by left padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

SPARE = 64  # columns allocated beyond the current length; the buffer doubles when they run out


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` that writes new keys and values into spare columns of its buffers and
    hands out views, instead of concatenating the whole cache at every step (on CPU that copy
    was half of a decoding step). The buffers double when the spare columns run out."""

    def __init__(self, key_buffer: Any = None, value_buffer: Any = None, length: int = 0) -> None:
        super().__init__()
        if key_buffer is not None:
            self._hold(key_buffer, value_buffer, length)

    def _hold(self, key_buffer: Any, value_buffer: Any, length: int) -> None:
        self.key_buffer, self.value_buffer = key_buffer, value_buffer
        self.length, self.device, self.is_initialized = length, key_buffer.device, True
        self.keys = key_buffer[:, :, :length]
        self.values = value_buffer[:, :, :length]

    def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
        self._hold(*spare_buffers(key_states[:, :, :0], value_states[:, :, :0], SPARE), 0)

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.key_buffer.shape[-2]:
            self._hold(*spare_buffers(self.keys, self.values, 2 * end), self.length)
        self.key_buffer[:, :, self.length : end] = key_states
        self.value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self.key_buffer[:, :, :end], self.value_buffer[:, :, :end]
        return self.keys, self.values

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Each row ``repeats`` times in a row (the k samples of a prompt), spare columns kept."""
        if self.is_initialized:
            keys, values = (b.repeat_interleave(repeats, 0) for b in (self.key_buffer, self.value_buffer))
            self._hold(keys, values, self.length)

    def batch_select_indices(self, indices: Any) -> None:
        """Only the rows ``indices`` (finished rows leave the batch), spare columns kept."""
        if self.is_initialized:
            keys, values = (b.index_select(0, indices) for b in (self.key_buffer, self.value_buffer))
            self._hold(keys, values, self.length)


def spare_buffers(keys: Any, values: Any, capacity: int) -> tuple[Any, Any]:
    """Buffers of ``capacity`` columns that start with ``keys`` and ``values``."""
    buffers = []
    for t in (keys, values):
        buffer = t.new_empty((*t.shape[:2], capacity, t.shape[-1]))
        buffer[:, :, : t.shape[-2]] = t
        buffers.append(buffer)
    return buffers[0], buffers[1]


def new_cache(layers: list[tuple[Any, Any]] | None = None) -> Cache:
    """A cache of growing layers, empty or holding ``layers`` (keys, values per layer)."""
    if layers is None:
        return Cache(layer_class_to_replicate=GrowingLayer)
    return Cache(layers=[GrowingLayer(*spare_buffers(k, v, k.shape[-2] + SPARE), k.shape[-2]) for k, v in layers])


@dataclass
class Rows:
    """Episodes decoded together (their indices), their cache and each row's end column.

    With ``prefix`` (``rlvr.evaluation.shared_prefix``) the prompts live there, once each, and
    the cache holds only each row's ids after its prompt (``prompts``: the prompt each row
    continues); ``extend`` and ``decode`` then take those ids and counts, not whole sequences."""

    ids: list[int]
    cache: Any = None
    ends: list[int] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)
    prefix: Any = None

    @property
    def length(self) -> int:
        return 0 if self.cache is None else self.cache.get_seq_length()

    def layers(self, index: Any = None) -> list[tuple[Any, Any]]:
        pairs = [(layer.keys, layer.values) for layer in self.cache.layers]
        if index is None:
            return pairs
        return [(k.index_select(0, index), v.index_select(0, index)) for k, v in pairs]


def select(rows: Rows, ids: list[int]) -> Rows:
    """Only the episodes ``ids`` (in that order), with their rows of the cache."""
    return join([(rows, ids)]) if ids else Rows([])


def join(parts: list[tuple[Rows, list[int] | None]]) -> Rows:
    """One batch of the episodes ``ids`` of each part (all of them for None), in that order:
    caches left-padded to a common length and stacked, with spare columns to grow into."""
    chosen = []
    for rows, ids in parts:
        position = {i: n for n, i in enumerate(rows.ids)}
        index = list(range(len(rows.ids))) if ids is None else [position[i] for i in ids]
        if index:
            chosen.append((rows, index))
    length = max(rows.length for rows, _ in chosen)
    count = sum(len(index) for _, index in chosen)
    layers = []
    for n, (keys, values) in enumerate(chosen[0][0].layers()):
        pair = []
        for side, first in enumerate((keys, values)):
            out = first.new_empty((count, first.shape[1], length + SPARE, first.shape[3]))
            row = 0
            for rows, index in chosen:
                source = rows.layers()[n][side]
                if index != list(range(len(rows.ids))):
                    source = source.index_select(0, torch.tensor(index, device=source.device))
                pad = length - rows.length  # masked, but must be finite: NaN survives a mask
                out[row : row + len(index), :, :pad] = 0
                out[row : row + len(index), :, pad:length] = source
                row += len(index)
            pair.append(out)
        layers.append(GrowingLayer(pair[0], pair[1], length))
    ids = [rows.ids[n] for rows, index in chosen for n in index]
    ends = [rows.ends[n] + length - rows.length for rows, index in chosen for n in index]
    prefix = next((rows.prefix for rows, _ in chosen if rows.prefix is not None), None)
    prompts = [rows.prompts[n] for rows, index in chosen for n in index] if prefix else []
    return Rows(ids, Cache(layers=layers), ends, prompts, prefix)


def admit(model: Any, ids: list[int], prompts: Sequence[list[int]], prefix: Any, first_name: int) -> tuple[Rows, Any]:
    """Episodes ``ids`` starting on ``prompts``, each distinct prompt prefilled once into the
    shared ``prefix`` (created when None) under the names ``first_name``, ...: rows with no
    ids of their own yet, and the logits of their prompts' last ids."""
    from rlvr.evaluation.shared_prefix import SharedPrefix

    first, inverse = _dedupe(prompts)
    distinct = [prompts[n] for n in first]
    shared, logits = extend(model, Rows(list(range(len(first)))), distinct, [0] * len(first))
    width = shared.length
    lengths = torch.tensor([len(p) for p in distinct], device=logits.device)[:, None]
    mask = torch.arange(width, device=logits.device)[None, :] >= width - lengths
    store = SharedPrefix.from_cache(shared.cache, mask.long(), first_name)
    if prefix is None:
        prefix = store
    else:
        prefix.add(store)
    empty = [tuple(t.new_zeros((len(ids), t.shape[1], 0, t.shape[3])) for t in kv) for kv in shared.layers()]
    index = torch.tensor(inverse, device=logits.device)
    names = [first_name + j for j in inverse]
    return Rows(list(ids), new_cache(empty), [0] * len(ids), names, prefix), logits[index]


def extend(model: Any, rows: Rows, sequences: Sequence[list[int]], cached: Sequence[int]) -> tuple[Rows, Any]:
    """Feed row ``r`` its ids after ``cached[r]`` on top of its cache (all of them when the rows
    have no cache yet); the rows afterwards and the logits of their last ids.

    Rows feeding fewer ids than the widest re-feed their last cached ids instead of leaving a
    hole. Rows with the same ids and no cache (the samples of one prompt) are prefilled once."""
    if rows.cache is None:
        first, inverse = _dedupe(sequences)
        if len(first) < len(sequences):
            shared, logits = extend(model, Rows(first), [sequences[n] for n in first], [cached[n] for n in first])
            index = torch.tensor(inverse, device=logits.device)
            ends = [shared.length] * len(rows.ids)
            return Rows(rows.ids, new_cache(shared.layers(index)), ends), logits[index]
    fed = [len(s) - c for s, c in zip(sequences, cached, strict=True)]
    width = max(fed)
    kept = [max(0, c - (width - f)) for c, f in zip(cached, fed, strict=True)]
    length = max(kept)
    chunks = [s[k:] for s, k in zip(sequences, kept, strict=True)]
    device = next(model.parameters()).device
    kept_t = torch.tensor(kept, device=device)[:, None]
    lead = width - torch.tensor([len(c) for c in chunks], device=device)[:, None]
    columns = torch.arange(length + width, device=device)[None, :]
    mask = ((columns >= length - kept_t) & (columns < length)) | (columns >= length + lead)
    positions = (kept_t + columns[:, length:] - length - lead).clamp(min=0)
    shared, offsets = _shared(rows, device)
    out = model(
        input_ids=torch.tensor([[0] * (width - len(c)) + c for c in chunks], device=device),
        attention_mask=mask.long(),  # the 0 ids under the mask could be any id
        position_ids=positions + offsets,
        cache=_realign(rows, cached, kept, length),
        use_cache=True,
        logits_to_keep=1,
        **shared,
    )
    ends = [length + width] * len(rows.ids)
    return Rows(rows.ids, out.cache, ends, rows.prompts, rows.prefix), out.logits[:, -1, :]


def decode(model: Any, rows: Rows, tokens: list[int], cached: list[int], active: list[bool]):
    """One id per row on top of its cache; rows not ``active`` feed a stand-in that their own
    mask hides from then on (their end stays). The logits of every row's new id."""
    device = next(model.parameters()).device
    length = rows.length
    ends = torch.tensor(rows.ends, device=device)[:, None]
    starts = ends - torch.tensor(cached, device=device)[:, None]
    live = torch.tensor(active, device=device)[:, None]
    columns = torch.arange(length + 1, device=device)[None, :]
    mask = ((columns >= starts) & (columns < ends)) | ((columns == length) & live)
    shared, offsets = _shared(rows, device)
    out = model(
        input_ids=torch.tensor(tokens, device=device)[:, None],
        attention_mask=mask.long(),
        position_ids=torch.tensor(cached, device=device)[:, None] + offsets,
        cache=rows.cache,
        use_cache=True,
        **shared,
    )
    rows.ends = [length + 1 if a else e for a, e in zip(active, rows.ends, strict=True)]
    return out.logits[:, -1, :]


def _shared(rows: Rows, device: Any) -> tuple[dict[str, Any], Any]:
    """The forward's keyword for the shared-prompt attention (its rows assigned), and where
    each row's own positions start: after its prompt (nothing and 0 without shared prompts)."""
    if rows.prefix is None:
        return {}, 0
    names = torch.tensor(rows.prompts, device=device)
    rows.prefix.select(names, drop=False)
    return {"shared_prefix": rows.prefix}, rows.prefix.offsets(names)[:, None]


def _dedupe(sequences: Sequence[list[int]]) -> tuple[list[int], list[int]]:
    """The first position of each distinct sequence, and each sequence's index among those."""
    seen: dict[tuple[int, ...], int] = {}
    first, inverse = [], []
    for n, ids in enumerate(sequences):
        key = tuple(ids)
        if key not in seen:
            seen[key] = len(first)
            first.append(n)
        inverse.append(seen[key])
    return first, inverse


def _realign(rows: Rows, cached: Sequence[int], kept: list[int], length: int) -> Cache:
    """The cache with only the first ``kept[r]`` of row ``r``'s cached ids, right-aligned in
    ``length`` columns; the rows' own cache when nothing moves."""
    if rows.cache is None or length == 0:
        return new_cache()
    total = rows.length
    if kept == list(cached) and length == total and all(e == total for e in rows.ends):
        return rows.cache  # already in place: the layers grow in place
    device = rows.cache.layers[0].keys.device
    column = torch.arange(length, device=device)[None, :]
    kept_t = torch.tensor(kept, device=device)[:, None]
    starts = torch.tensor(rows.ends, device=device)[:, None] - torch.tensor(cached, device=device)[:, None]
    source = torch.where(column >= length - kept_t, starts + kept_t - length + column, 0)
    index = source[:, None, :, None]
    return new_cache(
        [tuple(t.gather(2, index.expand(-1, t.shape[1], -1, t.shape[3])) for t in kv) for kv in rows.layers()]
    )
