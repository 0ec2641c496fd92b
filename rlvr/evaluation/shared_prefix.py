"""Decoding attention that reads each prompt's keys and values once for all of its k samples.

The k samples of a prompt share its prefill. Repeating that cache k-fold, as ``generate`` does,
makes every decoding step read k copies of the prompt's keys and values: on a CPU that is most
of a step for a small model with long prompts (the embedded model's prompts are 50-300
characters, each one id). Here the prompts' cache stays one row per prompt, each sample's own
ids grow in a cache of their own, and attention is computed in two parts: a prompt's keys
against the queries of all its samples at once (one matrix product per prompt and key head),
and each sample's own keys row by row; the two softmax parts are merged exactly through their
running maxima and sums, as flash attention merges its blocks.

``prefix_attention(model)`` switches a model to this attention for the duration of a sampling
loop; forwards without a ``shared_prefix`` keyword (the prefill) run transformers' SDPA with its
own masks unchanged, so only decoding steps differ, and only in float rounding.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

ATTENTION = "rlvr_shared_prefix"


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    def attention(module, query, key, value, attention_mask, *args, shared_prefix=None, **kw):
        if shared_prefix is None:
            return sdpa_attention_forward(module, query, key, value, attention_mask, *args, **kw)
        return shared_prefix.attend(module.layer_idx, query, key, value, kw.get("scaling"))

    AttentionInterface.register(ATTENTION, attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # the prefill's masks: SDPA's own


def can_share(model: Any, cache: Any) -> bool:
    """Whether decoding on ``model`` can read shared prompts: its attention is transformers'
    SDPA (which the prefill keeps), its cache layers are plain growing ones (no sliding
    windows), and its forwards are not gathering sharded weights (FSDP keeps the k-fold cache)."""
    from rlvr.evaluation.kv_rows import GrowingLayer

    config = getattr(model, "config", None)
    layers = getattr(cache, "layers", None) or [getattr(cache, "layer_class_to_replicate", None)]
    return (
        getattr(config, "_attn_implementation", None) == "sdpa"
        and not getattr(model, "gathers_weights", False)
        and all(layer is GrowingLayer or isinstance(layer, GrowingLayer) for layer in layers)
    )


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
    """The prompts' keys and values (one row per prompt, left-padded), an additive mask over
    their padding, and ``slots``: for each decoding row, ``prompt * k + sample`` (prompt: its
    row here)."""

    keys: list[Any]  # per layer: (prompts, key heads, prompt columns, head dim)
    values: list[Any]
    bias: Any  # (prompts, 1, 1, prompt columns): 0 on prompt ids, -inf on padding
    slots: Any
    k: int
    prompts: Any  # the batch's first index of each prompt still held

    @classmethod
    def from_cache(cls, cache: Any, mask: Any, k: int) -> SharedPrefix:
        """The prefilled prompts' cache (``mask``: 1 on prompt ids) for k samples each. The
        keys and values under padding are zeroed: masked, they must still be finite."""
        pad = (mask == 0)[:, None, :, None]
        keys = [layer.keys.masked_fill(pad, 0.0) for layer in cache.layers]
        values = [layer.values.masked_fill(pad, 0.0) for layer in cache.layers]
        bias = torch.zeros(mask.shape, dtype=keys[0].dtype, device=mask.device)
        bias = bias.masked_fill(mask == 0, float("-inf"))[:, None, None, :]
        slots = torch.arange(len(mask) * k, device=mask.device)
        return cls(keys, values, bias, slots, k, torch.arange(len(mask), device=mask.device))

    def select(self, rows: Any) -> None:
        """Only the decoding rows ``rows`` (``prompt * k + sample`` in the batch's first
        numbering) from now on; prompts none of them samples leave."""
        first = rows // self.k
        live = torch.unique(first)  # sorted, as ``prompts`` is
        if len(live) < len(self.prompts):
            kept = torch.searchsorted(self.prompts, live)
            self.keys = [t.index_select(0, kept) for t in self.keys]
            self.values = [t.index_select(0, kept) for t in self.values]
            self.bias = self.bias.index_select(0, kept)
            self.prompts = live
        self.slots = torch.searchsorted(self.prompts, first) * self.k + rows % self.k

    def attend(self, layer: int, query: Any, key: Any, value: Any, scaling: float | None):
        """One decoding step's attention output (rows, 1, heads, head dim) of layer ``layer``:
        ``key``/``value`` hold the rows' own ids, the prompts' are this object's."""
        rows, heads, width, dim = query.shape
        if width != 1:
            raise ValueError("shared-prefix attention decodes one id per row at a time")
        scale = dim**-0.5 if scaling is None else scaling
        prompt_keys, prompt_values = self.keys[layer], self.values[layer]
        prompts, key_heads, columns, _ = prompt_keys.shape
        group, k = heads // key_heads, self.k
        q = query.reshape(rows, key_heads, group, dim)  # head h reads key head h // group
        # The prompts' part: every sample slot of a prompt, live or not, in one product.
        grid = q.new_zeros(prompts * k, key_heads, group, dim)
        grid[self.slots] = q
        grid = grid.view(prompts, k, key_heads, group, dim).transpose(1, 2)
        scores = (
            torch.matmul(
                grid.reshape(prompts, key_heads, k * group, dim), prompt_keys.transpose(-1, -2)
            )
            * scale
            + self.bias
        )
        top = scores.amax(-1, keepdim=True)
        weights = torch.exp(scores - top)
        parts = (torch.matmul(weights, prompt_values), weights.sum(-1, keepdim=True), top)
        out_p, sum_p, top_p = (self._rows(t, prompts, key_heads, group) for t in parts)
        # The samples' own part, row by row.
        scores = torch.matmul(q, key.transpose(-1, -2)) * scale
        top_o = scores.amax(-1, keepdim=True)
        weights = torch.exp(scores - top_o)
        out_o, sum_o = torch.matmul(weights, value), weights.sum(-1, keepdim=True)
        top = torch.maximum(top_p, top_o)
        a, b = torch.exp(top_p - top), torch.exp(top_o - top)
        out = (a * out_p + b * out_o) / (a * sum_p + b * sum_o)
        return out.reshape(rows, 1, heads, dim), None

    def _rows(self, t: Any, prompts: int, key_heads: int, group: int) -> Any:
        """(prompts, key heads, k * group, x) -> (rows, key heads, group, x) of live slots."""
        t = t.view(prompts, key_heads, self.k, group, t.shape[-1]).transpose(1, 2)
        return t.reshape(prompts * self.k, key_heads, group, -1)[self.slots]
