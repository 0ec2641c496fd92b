"""Decoding from shared prompts (``rlvr.evaluation.shared_prefix``) against a k-fold cache: the
attention itself against a per-row reference, and ``sample_tokens`` end to end on a small Qwen2
with grouped-query attention, padded prompts of unequal lengths and rows leaving mid-batch."""

from __future__ import annotations

import copy

import pytest
import torch

from rlvr.evaluation.generation import Decoding, sampler_for
from rlvr.evaluation.sampling import sample_tokens
from rlvr.evaluation.shared_prefix import ATTENTION, SharedPrefix, can_share, prefix_attention
from tests.test_generation import end_token, greedy, prompt_ids, tiny  # noqa: F401


def reference(query, own_keys, own_values, visible, prompt_keys, prompt_values, lengths):
    """Row by row, query by query: softmax over its prompt's real columns and the own columns
    it sees (``visible``: rows x queries x own columns)."""
    rows, heads, new, dim = query.shape
    group = heads // own_keys.shape[1]
    out = torch.zeros(rows, new, heads, dim)
    for r in range(rows):
        width = prompt_keys[r].shape[1]
        for t in range(new):
            seen = visible[r, t]
            keys = torch.cat([prompt_keys[r][:, width - lengths[r] :], own_keys[r][:, seen]], 1)
            values = torch.cat([prompt_values[r][:, width - lengths[r] :], own_values[r][:, seen]], 1)
            keys, values = (x.repeat_interleave(group, 0) for x in (keys, values))
            scores = query[r, :, t : t + 1] @ keys.transpose(-1, -2) * dim**-0.5
            out[r, t] = (torch.softmax(scores, -1) @ values)[:, 0]
    return out


class Prefilled:
    """A prefilled prompts' cache of two layers (left-padded; NaN under the padding)."""

    def __init__(self, lengths: list[int], width: int, generator) -> None:
        self.mask = torch.tensor([[0] * (width - n) + [1] * n for n in lengths])
        self.layers = []
        for _ in range(2):
            layer = type("Layer", (), {})()
            layer.keys = torch.randn(len(lengths), KEY_HEADS, width, DIM, generator=generator)
            layer.values = torch.randn(len(lengths), KEY_HEADS, width, DIM, generator=generator)
            layer.keys[self.mask[:, None, :, None].expand_as(layer.keys) == 0] = float("nan")
            layer.values[self.mask[:, None, :, None].expand_as(layer.keys) == 0] = float("nan")
            self.layers.append(layer)


KEY_HEADS, HEADS, DIM = 2, 6, 8


@pytest.mark.parametrize("new", [1, 3], ids=["decoding", "feeding-several-ids"])
def test_attention_equals_each_row_attending_to_its_own_copy(new):
    generator = torch.Generator().manual_seed(0)
    first = Prefilled([7, 3, 5], 7, generator)
    later = Prefilled([9, 2], 9, generator)  # added later, wider: the store pads the first
    prefix = SharedPrefix.from_cache(first, first.mask)
    assert prefix.add(SharedPrefix.from_cache(later, later.mask, first_name=3)) == 3
    names = torch.tensor([0, 0, 2, 3, 3, 3, 4])  # prompt 1 has no row: it leaves
    prefix.select(names)
    assert prefix.names.tolist() == [0, 2, 3, 4] and prefix.width == 3
    assert prefix.offsets(names).tolist() == [7, 7, 5, 9, 9, 9, 2]
    rows, own = len(names), 5
    query = torch.randn(rows, HEADS, new, DIM, generator=generator)
    own_keys = torch.randn(rows, KEY_HEADS, own, DIM, generator=generator)
    own_values = torch.randn(rows, KEY_HEADS, own, DIM, generator=generator)
    visible = torch.rand(rows, new, own, generator=generator) > 0.4
    visible[:, :, -1] = True
    visible[2, 0] = False  # a query that sees none of its own ids: its prompt alone
    got, _ = prefix.attend(1, query, own_keys, own_values, None, visible[:, None])
    held = {0: (first, 0), 2: (first, 2), 3: (later, 0), 4: (later, 1)}
    keys = [held[n][0].layers[1].keys[held[n][1]].nan_to_num() for n in names.tolist()]
    values = [held[n][0].layers[1].values[held[n][1]].nan_to_num() for n in names.tolist()]
    lengths = prefix.offsets(names).tolist()
    want = reference(query, own_keys, own_values, visible, keys, values, lengths)
    assert got.shape == (rows, new, HEADS, DIM)
    assert torch.isfinite(got).all()
    assert torch.allclose(got, want, atol=1e-5)


def test_sampling_draws_what_the_k_fold_cache_draws(tiny):  # noqa: F811
    model, tok = tiny
    ids = prompt_ids(tok)
    assert can_share(model)
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
            )
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
        assert not can_share(model)
    finally:
        model.config._attn_implementation = "sdpa"
    elsewhere = copy.deepcopy(model).to("meta")  # not on the CPU: its kernel is torch's CPU one
    assert not can_share(elsewhere)
    model.gathers_weights = True  # FSDP's lockstep wrapper: forwards gather sharded weights
    try:
        assert not can_share(model)
    finally:
        del model.gathers_weights
