"""Attention that reads each prompt's keys and values once for all of the samples continuing it.

The k samples of a prompt share its prefill. Repeating that cache k-fold, as ``generate`` does,
makes every decoding step read k copies of the prompt, and every rebuild of a multi-turn batch
copy them: on a CPU that is most of the work for a small model with long prompts (the embedded
model's ids are characters: 30-75 per single-turn prompt of the study, about 150 per agent
prompt with its tool schemas, 530 at the harder agent levels). Here the prompts' cache holds
one row per prompt, each sample's own ids grow in a cache of their own, and attention is
computed in two parts: a prompt's keys against the queries of all its samples at once (one
fused attention call per prompt and key head: the samples' queries are its rows), and each
sample's own ids row by row; the two softmax parts are merged exactly through their
log-sum-exps, as flash attention merges its blocks.

``prefix_attention(model)`` switches a model to this attention for the duration of a sampling
loop; forwards without a ``shared_prefix`` keyword (the prompts' prefill) run transformers'
SDPA with its own masks unchanged, so only the forwards after it differ, and only in float
rounding.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

ATTENTION = "rlvr_shared_prefix"


@functools.cache
def _register() -> None:
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    def attention(module, query, key, value, attention_mask, *args, shared_prefix=None, **kw):
        if shared_prefix is None:
            return sdpa_attention_forward(module, query, key, value, attention_mask, *args, **kw)
        scaling = kw.get("scaling")
        return shared_prefix.attend(module.layer_idx, query, key, value, scaling, attention_mask)

    AttentionInterface.register(ATTENTION, attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # the prefill's masks: SDPA's own


def can_share(model: Any) -> bool:
    """Whether decoding on ``model`` can read shared prompts: it runs on the CPU (the fused
    kernel that also returns log-sum-exps is torch's CPU one; accelerators keep the k-fold
    cache), its attention is transformers' SDPA (which the prefill keeps), every layer attends
    to the whole sequence (no sliding windows), and its forwards do not gather sharded weights
    (FSDP keeps the k-fold cache)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    if getattr(model, "gathers_weights", False):
        return False
    parameter = next(iter(model.parameters()), None)
    if parameter is None or parameter.device.type != "cpu":
        return False
    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=config).layers)


@contextmanager
def prefix_attention(model: Any):
    """``model`` on this module's attention until the block ends (SDPA again afterwards)."""
    _register()
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = before


@dataclass
class SharedPrefix:
    """Prompts' keys and values, one row per prompt (left-padded, an additive mask over the
    padding), and which prompt each decoding row continues: ``slots[row]`` is
    ``prompt * width + n`` for the row's rank ``n`` among its prompt's rows."""

    keys: list[Any]  # per layer: (prompts, key heads, prompt columns, head dim)
    values: list[Any]
    bias: Any  # (prompts, 1, 1, prompt columns): 0 on prompt ids, -inf on padding
    lengths: Any  # (prompts,): each prompt's ids (its rows' positions start there)
    names: Any  # (prompts,): each prompt's name, increasing (rows name the prompt they continue)
    slots: Any = None
    width: int = 1

    @classmethod
    def from_cache(cls, cache: Any, mask: Any, first_name: int = 0) -> SharedPrefix:
        """The prefilled prompts' cache (``mask``: 1 on prompt ids), named ``first_name``, ...
        The keys and values under padding are zeroed: masked, they must still be finite."""
        pad = (mask == 0)[:, None, :, None]
        keys = [layer.keys.masked_fill(pad, 0.0) for layer in cache.layers]
        values = [layer.values.masked_fill(pad, 0.0) for layer in cache.layers]
        bias = torch.zeros(mask.shape, dtype=keys[0].dtype, device=mask.device)
        bias = bias.masked_fill(mask == 0, float("-inf"))[:, None, None, :]
        names = torch.arange(first_name, first_name + len(mask), device=mask.device)
        return cls(keys, values, bias, mask.sum(-1), names)

    def select(self, names: Any, drop: bool = True) -> None:
        """The rows of the next forwards continue the prompts ``names``; with ``drop``, the
        prompts none of them continues are let go."""
        if drop:
            live = torch.unique(names)
            if len(live) < len(self.names):
                self.keep(torch.searchsorted(self.names, live))
        self.assign(torch.searchsorted(self.names, names))

    def offsets(self, names: Any) -> Any:
        """The prompt length before each row's own ids (where its positions continue)."""
        return self.lengths[torch.searchsorted(self.names, names)]

    def assign(self, prompts: Any) -> None:
        """Rows from now on: ``prompts[row]``, the prompt (a row here) each row continues."""
        counts = torch.bincount(prompts, minlength=len(self.bias))
        order = torch.argsort(prompts, stable=True)
        rank = torch.empty_like(prompts)
        rank[order] = torch.arange(len(prompts), device=prompts.device)
        rank -= (counts.cumsum(0) - counts)[prompts]
        self.width = max(1, int(counts.max())) if len(prompts) else 1
        self.slots = prompts * self.width + rank

    def keep(self, prompts: Any) -> None:
        """Only the prompts ``prompts`` (sorted rows here), renumbered 0, 1, ... in that order."""
        self.keys = [t.index_select(0, prompts) for t in self.keys]
        self.values = [t.index_select(0, prompts) for t in self.values]
        self.bias, self.lengths = self.bias.index_select(0, prompts), self.lengths[prompts]
        self.names = self.names[prompts]

    def add(self, other: SharedPrefix) -> int:
        """Hold ``other``'s prompts too (named after this one's); returns the row of its first."""
        first, columns = len(self.bias), max(self.bias.shape[-1], other.bias.shape[-1])

        def stacked(a: Any, b: Any, dim: int, fill: float) -> Any:
            return torch.cat([_left_pad(a, columns, dim, fill), _left_pad(b, columns, dim, fill)])

        self.keys = [stacked(a, b, 2, 0.0) for a, b in zip(self.keys, other.keys, strict=True)]
        self.values = [stacked(a, b, 2, 0.0) for a, b in zip(self.values, other.values, strict=True)]
        self.bias = stacked(self.bias, other.bias, 3, float("-inf"))
        self.lengths = torch.cat([self.lengths, other.lengths])
        self.names = torch.cat([self.names, other.names])
        return first

    def attend(self, layer: int, query: Any, key: Any, value: Any, scaling: Any, mask: Any):
        """Attention output (rows, new ids, heads, head dim) of layer ``layer``: each row's
        queries over its prompt (all of it precedes them) and over its own ids (``key``,
        ``value``, under ``mask`` as transformers built it: padding and causality), the two
        softmax parts merged through their log-sum-exps."""
        rows, heads, new, dim = query.shape
        scale = dim**-0.5 if scaling is None else scaling
        prompt_keys, prompt_values = self.keys[layer], self.values[layer]
        prompts, key_heads = prompt_keys.shape[:2]
        n, slots = heads // key_heads * new, self.width
        q = query.reshape(rows, key_heads, n, dim)  # head h reads key head h // (heads/key_heads)
        if new == 1:  # every slot of a prompt, live or not, in one product per key head
            grid = q.new_zeros(prompts * slots, key_heads, n, dim)
            grid[self.slots] = q
            grid = grid.view(prompts, slots, key_heads, n, dim).transpose(1, 2)
            grid = grid.reshape(prompts, key_heads, slots * n, dim)
            out_p, lse_p = _attention(grid, prompt_keys, prompt_values, self.bias, scale)
            out_p, lse_p = (
                self._rows(out_p, key_heads, n),
                self._rows(lse_p[..., None], key_heads, n),
            )
        else:  # several new ids (tool results): each row reads its prompt's copy
            index = torch.div(self.slots, slots, rounding_mode="floor")
            out_p, lse_p = _attention(q, prompt_keys[index], prompt_values[index], self.bias[index], scale)
            lse_p = lse_p[..., None]
        visible = _visible(mask, rows, heads // key_heads, new, key.shape[-2], query)
        out_o, lse_o = _attention(q, key, value, visible, scale)
        lse_o = lse_o[..., None]
        if visible is not None:  # a query that sees none of its own ids has no own part
            seen = (visible > float("-inf")).any(-1, keepdim=True)
            lse_o = lse_o.masked_fill(~seen, float("-inf"))
        lse = torch.logaddexp(lse_p, lse_o)
        out = torch.exp(lse_p - lse) * out_p + torch.exp(lse_o - lse) * out_o
        return out.reshape(rows, heads, new, dim).transpose(1, 2).contiguous(), None

    def _rows(self, t: Any, key_heads: int, n: int) -> Any:
        """(prompts, key heads, slots * n, x) -> (rows, key heads, n, x) of the rows' slots."""
        t = t.reshape(len(self.bias), key_heads, self.width, n, t.shape[-1]).transpose(1, 2)
        return t.reshape(len(self.bias) * self.width, key_heads, n, -1)[self.slots]


def _attention(q: Any, k: Any, v: Any, mask: Any, scale: float) -> tuple[Any, Any]:
    """Softmax attention of ``q`` over ``k``/``v`` under an additive ``mask``: the output and
    each query's log-sum-exp of scores, from torch's fused CPU flash kernel, which returns
    both. Keys and values are taken in the queries' dtype (under CPU autocast, rotary
    embeddings leave queries and keys in float32)."""
    k, v = k.to(q.dtype), v.to(q.dtype)
    mask = None if mask is None else mask.to(q.dtype)
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=mask, scale=scale)


def _visible(mask: Any, rows: int, group: int, new: int, columns: int, query: Any) -> Any:
    """An additive mask over the rows' own columns, (rows, 1, group * new, columns) in the
    queries' head-major order and dtype; None when every query sees every column."""
    device = query.device
    if mask is None:
        if new == 1:
            return None
        position = torch.arange(new, device=device)[:, None] + columns - new
        mask = (torch.arange(columns, device=device)[None, :] <= position)[None, None]
    if mask.dtype == torch.bool:
        blank = torch.zeros(mask.shape, dtype=query.dtype, device=device)
        mask = blank.masked_fill(~mask, float("-inf"))
    mask = mask.to(query.dtype)
    mask = mask[..., -columns:].expand(rows, 1, new, columns)
    return mask[:, :, None].expand(rows, 1, group, new, columns).reshape(rows, 1, -1, columns)


def _left_pad(t: Any, columns: int, dim: int, fill: float) -> Any:
    """``t`` with ``fill`` columns before its own along ``dim``, ``columns`` in all."""
    missing = columns - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_full(shape, fill), t], dim)
