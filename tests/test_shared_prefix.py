"""Decoding from shared prompts (``rlvr.evaluation.shared_prefix``) against a k-fold cache: the
attention itself against a per-row reference, and ``sample_tokens`` end to end on a small Qwen2
with grouped-query attention, padded prompts of unequal lengths and rows leaving mid-batch."""

from __future__ import annotations

import pytest
import torch

from rlvr.evaluation.generation import Decoding, sampler_for
from rlvr.evaluation.kv_rows import new_cache
from rlvr.evaluation.sampling import sample_tokens
from rlvr.evaluation.shared_prefix import ATTENTION, SharedPrefix, can_share, prefix_attention
from tests.test_generation import end_token, greedy, prompt_ids, tiny  # noqa: F401


def reference(query, own_keys, own_values, prefix: SharedPrefix, layer: int, rows, lengths):
    """Row by row: softmax over its prompt's real columns, then its own ids."""
    out = []
    heads, key_heads = query.shape[1], own_keys.shape[1]
    for r, row in enumerate(rows.tolist()):
        p = row // prefix.k
        width = prefix.keys[layer].shape[2]
        keys = torch.cat([prefix.keys[layer][p, :, width - lengths[p] :], own_keys[r]], 1)
        values = torch.cat([prefix.values[layer][p, :, width - lengths[p] :], own_values[r]], 1)
        keys = keys.repeat_interleave(heads // key_heads, 0)
        values = values.repeat_interleave(heads // key_heads, 0)
        weights = torch.softmax(query[r] @ keys.transpose(-1, -2) * query.shape[-1] ** -0.5, -1)
        out.append((weights @ values).transpose(0, 1))
    return torch.stack(out)


def test_attention_equals_each_row_attending_to_its_own_copy():
    generator = torch.Generator().manual_seed(0)
    prompts, k, key_heads, heads, dim, width = 3, 4, 2, 6, 8, 7
    lengths = [7, 3, 5]  # left padding under the shorter prompts
    mask = torch.tensor([[0] * (width - n) + [1] * n for n in lengths])

    class Layer:
        def __init__(self) -> None:
            self.keys = torch.randn(prompts, key_heads, width, dim, generator=generator)
            self.values = torch.randn(prompts, key_heads, width, dim, generator=generator)
            self.keys[2, :, :2] = float("nan")  # padding may hold anything; it must not leak
            self.values[2, :, :1] = float("nan")

    class Cache:
        layers = [Layer(), Layer()]

    prefix = SharedPrefix.from_cache(Cache(), mask, k)
    kept = {p: (prefix.keys[1][p].clone(), prefix.values[1][p].clone()) for p in range(prompts)}
    rows = torch.tensor([0, 1, 3, 8, 9, 10, 11])  # prompt 1 has no row left: it leaves
    prefix.select(rows)
    assert len(prefix.bias) == 2 and prefix.prompts.tolist() == [0, 2]
    query = torch.randn(len(rows), heads, 1, dim, generator=generator)
    own_keys = torch.randn(len(rows), key_heads, 5, dim, generator=generator)
    own_values = torch.randn(len(rows), key_heads, 5, dim, generator=generator)
    got, _ = prefix.attend(1, query, own_keys, own_values, None)
    whole = SharedPrefix(
        [None, torch.stack([kept[p][0] for p in range(prompts)])],
        [None, torch.stack([kept[p][1] for p in range(prompts)])],
        None, None, k, None,
    )  # fmt: skip
    want = reference(query, own_keys, own_values, whole, 1, rows, lengths)
    assert got.shape == (len(rows), 1, heads, dim)
    assert torch.isfinite(got).all()
    assert torch.allclose(got, want, atol=1e-5)


def test_sampling_draws_what_the_k_fold_cache_draws(tiny):  # noqa: F811
    model, tok = tiny
    ids = prompt_ids(tok)
    assert can_share(model, new_cache())
    free = sample_tokens(model, ids, greedy(16, tok.eos_token_id, tok.pad_token_id), k=2).ids
    end = end_token(r[0] for r in free)  # rows end at different steps and leave the batch
    for sampler in (
        greedy(16, end, tok.pad_token_id),
        sampler_for(tok, model, Decoding(temperature=1.0, top_p=0.9, max_new_tokens=16)),
    ):
        sampler = type(sampler)(**{**sampler.__dict__, "eos_token_ids": (end,)})
        runs = [
            sample_tokens(
                model,
                ids,
                sampler,
                k=3,
                generator=torch.Generator().manual_seed(4),
                logprobs=True,
                share_prompts=share,
            )  # fmt: skip
            for share in (False, True)
        ]
        assert runs[0].ids == runs[1].ids
        lengths = {len(c) for p in runs[0].ids for c in p}
        assert len(lengths) > 1  # some rows left early
        for a, b in zip(runs[0].logprobs, runs[1].logprobs, strict=True):
            for x, y in zip(a, b, strict=True):
                assert torch.allclose(torch.tensor(x), torch.tensor(y), atol=1e-5)
    assert model.config._attn_implementation == "sdpa"  # switched back after sampling


def test_the_model_gets_its_attention_back_when_sampling_fails(tiny):  # noqa: F811
    model, _ = tiny
    with pytest.raises(RuntimeError, match="boom"), prefix_attention(model):
        assert model.config._attn_implementation == ATTENTION
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "sdpa"


def test_models_it_does_not_apply_to_keep_the_k_fold_cache(tiny):  # noqa: F811
    model, _ = tiny
    model.config._attn_implementation = "eager"
    try:
        assert not can_share(model, new_cache())
    finally:
        model.config._attn_implementation = "sdpa"
    model.gathers_weights = True  # FSDP's lockstep wrapper: forwards gather sharded weights
    try:
        assert not can_share(model, new_cache())
    finally:
        del model.gathers_weights
    assert not can_share(model, type("Windowed", (), {"layers": [object()]})())
