"""KV-cache sampling from a causal LM: each prompt prefilled once, k samples drawn from its cache.

The prompts of a batch are left-padded and run through the model once, so the k samples of a
prompt share its prefill; decoding reads each prompt's keys and values once for all its samples
(``rlvr.evaluation.shared_prefix``), or, where that attention does not apply, from a cache
repeated k-fold. Decoding feeds one token per row per step through the model's own forward
(``cache``, attention mask, position ids, as ``model.generate`` prepares them), and rows that
emitted an end token leave the batch (their cache rows are dropped) instead of decoding padding
until the longest row ends. Random draws come from the caller's ``torch.Generator`` only, never
from torch's global one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

# Finished rows are dropped once they are this fraction of the batch (or all of it): each drop
# copies the whole cache, so rows leave in groups, and at most this share decodes padding.
COMPACT_FRACTION = 1 / 8


@dataclass(frozen=True)
class Sampler:
    """The next-token distribution (temperature, then top-p; no top-k) and when to stop."""

    max_new_tokens: int
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    temperature: float = 1.0
    top_p: float = 1.0
    greedy: bool = False  # argmax of the logits; temperature and top-p unused

    def __post_init__(self) -> None:
        if not self.greedy and self.temperature <= 0:
            raise ValueError(f"temperature must be > 0 when sampling, got {self.temperature}")


@dataclass(frozen=True)
class Samples:
    """Per prompt, k completions: token ids up to and including the first end token."""

    ids: list[list[list[int]]]
    logprobs: list[list[list[float]]] | None  # of each sampled token, temperature applied


def sample_tokens(
    model,
    prompt_ids: Sequence[Sequence[int]],
    sampler: Sampler,
    k: int = 1,
    generator=None,
    logprobs: bool = False,
    on_finished: Callable[[list[int], list[list[int]]], None] | None = None,
    share_prompts: bool = True,
) -> Samples:
    """k completions for each prompt, in prompt order; ``generator`` draws every sample
    (required unless greedy). ``logprobs`` also returns each sampled token's log-probability.
    ``on_finished(rows, ids)`` hears of rows as they leave the batch while others still decode
    (row ``p * k + n`` is prompt ``p``'s sample ``n``; ids up to and including the end token),
    so a caller can start scoring them; rows that end with the batch are not reported.
    ``share_prompts=False`` decodes from a k-fold copy of the prompts' cache even where the
    shared-prompt attention applies (the reference it is measured and tested against)."""
    import torch

    from rlvr.evaluation.shared_prefix import SharedPrefix, can_share, prefix_attention

    if generator is None and not sampler.greedy:
        raise ValueError("sampling needs a torch.Generator (torch's global one is left alone)")
    if not prompt_ids or sampler.max_new_tokens < 1:
        empty = [[[] for _ in range(k)] for _ in prompt_ids]
        return Samples(empty, empty if logprobs else None)
    device = next(model.parameters()).device
    ids, mask = _left_pad(prompt_ids, sampler.pad_token_id, device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    padded = not bool(mask.all())  # unpadded batches run without a mask, as in generate
    cache = _new_cache(model)
    eos = torch.tensor(sampler.eos_token_ids, device=device)
    rows = torch.arange(len(prompt_ids) * k, device=device)  # output row of each batch row
    tokens = torch.full((len(rows), sampler.max_new_tokens), sampler.pad_token_id, device=device)
    scores = torch.zeros(tokens.shape, device=device) if logprobs else None
    done = torch.zeros(len(rows), dtype=torch.bool, device=device)
    share = share_prompts and k > 1 and can_share(model)
    prefix = None
    with no_autograd(model), prefix_attention(model) if share else nullcontext():
        logits = _forward(model, ids, mask if padded else None, positions, cache, last_only=True)
        if share:  # the prompts' cache stays one row each; the samples' ids grow a new one
            prefix = SharedPrefix.from_cache(cache, mask)  # prompt p's sample n: row p * k + n
            prefix.select(rows // k)
            cache, padded = _new_cache(model), False  # the samples' own ids: no padding
            logits, positions = (t.repeat_interleave(k, 0) for t in (logits, positions))
        elif k > 1:
            cache.batch_repeat_interleave(k)
            logits, mask, positions = (t.repeat_interleave(k, 0) for t in (logits, mask, positions))
        for step in range(sampler.max_new_tokens):
            token, logp = _pick(logits, sampler, generator, logprobs)
            token = token.masked_fill(done, sampler.pad_token_id)
            tokens[rows, step] = token
            if scores is not None:
                scores[rows, step] = logp
            done |= torch.isin(token, eos)
            finished = int(done.sum())
            if finished == len(done) or step + 1 == sampler.max_new_tokens:
                break
            if finished >= max(1, len(done) * COMPACT_FRACTION):
                if on_finished is not None:
                    _report(on_finished, rows, tokens, done, step + 1, sampler.eos_token_ids)
                keep = (~done).nonzero().squeeze(1)
                cache.batch_select_indices(keep)
                rows, token, positions, done = (t[keep] for t in (rows, token, positions, done))
                mask = mask[keep] if padded else mask
                if prefix is not None:
                    prefix.select(rows // k)
            positions = positions[:, -1:] + 1
            if padded:
                mask = torch.cat([mask, mask.new_ones(len(mask), 1)], dim=1)
            ids = token[:, None]
            logits = _forward(model, ids, mask if padded else None, positions, cache, False, prefix)
    return _unpad(tokens, scores, sampler.eos_token_ids, k)


def no_autograd(model):
    """``torch.inference_mode``, or ``torch.no_grad`` for a model whose forwards gather sharded
    weights (``gathers_weights``): FSDP gathers them into buffers that training writes into
    later, which inference mode would have made read-only outside it."""
    import torch

    return torch.no_grad() if getattr(model, "gathers_weights", False) else torch.inference_mode()


def _report(on_finished, rows, tokens, done, width: int, eos_token_ids) -> None:
    """Tell ``on_finished`` of the rows about to leave: their output rows and token ids."""
    leaving = rows[done]
    on_finished(leaving.tolist(), _until_end(tokens[leaving, :width].tolist(), eos_token_ids))


def nucleus(probs, top_p: float):
    """Probabilities outside the smallest set whose mass reaches ``top_p`` set to zero."""
    if top_p >= 1.0:
        return probs
    ordered, order = probs.sort(dim=-1, descending=True)
    ordered = ordered.masked_fill(ordered.cumsum(-1) - ordered >= top_p, 0.0)
    return probs.new_zeros(probs.shape).scatter(-1, order, ordered)


def draw(probs, generator):
    """One index per row, with probability proportional to ``probs``, by inverting the CDF:
    one uniform number per row (``torch.multinomial`` measured ~10x slower on CPU)."""
    import torch

    cdf = probs.cumsum(-1)
    total = cdf[:, -1:]
    u = torch.rand(total.shape, generator=generator, device=cdf.device, dtype=cdf.dtype) * total
    u = torch.minimum(u, torch.nextafter(total, torch.zeros_like(total)))  # rounding: < total
    return torch.searchsorted(cdf, u, right=True).squeeze(1)  # right: zero-mass ids never hit


def _pick(logits, sampler: Sampler, generator, logprobs: bool):
    import torch

    logits = logits.float()
    if sampler.greedy:
        token = logits.argmax(-1)
        logp = torch.log_softmax(logits, -1) if logprobs else None
    else:
        logp = torch.log_softmax(logits / sampler.temperature, -1)
        token = draw(nucleus(logp.exp(), sampler.top_p), generator)
    if logp is None:
        return token, None
    return token, logp.gather(1, token[:, None]).squeeze(1)


def _forward(model, ids, mask, positions, cache, last_only: bool, prefix=None):
    """Logits at each row's last position (only that one is projected when the model allows);
    ``prefix``: the prompts' shared cache (``rlvr.evaluation.shared_prefix``), if any."""
    kwargs: dict = {"logits_to_keep": 1} if last_only and _keeps_logits(model) else {}
    if prefix is not None:
        kwargs["shared_prefix"] = prefix
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
        **kwargs,
    )
    return out.logits[:, -1, :]


def _keeps_logits(model) -> bool:
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def _new_cache(model):
    """A cache that grows in place (``kv_rows.GrowingLayer``: a DynamicCache concatenates
    every layer's whole cache at every step, a fifth of a CPU decoding step measured); a
    DynamicCache for models with sliding-window or other special layers, which it crops."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    from rlvr.evaluation.kv_rows import new_cache

    cache = DynamicCache(config=model.config)
    if cache.layers and all(type(layer) is DynamicLayer for layer in cache.layers):
        return new_cache()
    return cache


def _left_pad(prompt_ids: Sequence[Sequence[int]], pad: int, device):
    import torch

    width = max(len(p) for p in prompt_ids)
    ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompt_ids], device=device)
    lengths = torch.tensor([len(p) for p in prompt_ids], device=device)
    mask = (torch.arange(width, device=device)[None, :] >= (width - lengths)[:, None]).long()
    return ids, mask


def _unpad(tokens, scores, eos_token_ids: Sequence[int], k: int) -> Samples:
    ids = _until_end(tokens.tolist(), eos_token_ids)
    lps = None
    if scores is not None:
        lps = [lp[: len(i)] for i, lp in zip(ids, scores.tolist(), strict=True)]
    return Samples(_group(ids, k), _group(lps, k) if lps is not None else None)


def _until_end(rows: list[list[int]], eos_token_ids: Sequence[int]) -> list[list[int]]:
    """Each row up to and including its first end token."""
    ends = set(eos_token_ids)
    return [row[: next((i + 1 for i, t in enumerate(row) if t in ends), len(row))] for row in rows]


def _group(rows: list, k: int) -> list[list]:
    return [rows[i : i + k] for i in range(0, len(rows), k)]
