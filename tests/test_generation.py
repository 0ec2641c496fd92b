"""Evaluation generation on the tiny model: the KV-cache sampler against ``model.generate``
(greedy, end tokens), seeding, k samples per prompt in input order, and the distribution the
samples are drawn from."""

from __future__ import annotations

import pytest
import torch

from rlvr.evaluation.generation import Decoding, generate, sampler_for
from rlvr.evaluation.sampling import Sampler, draw, nucleus, sample_tokens
from rlvr.models.chat_format import ChatFormat

# Unequal lengths and an unsorted order: left padding and the reordering are exercised.
PROMPTS = [[{"role": "user", "content": "x" * n}] for n in (9, 1, 30, 4, 17, 4)]


@pytest.fixture(scope="module")
def tiny():
    """The embedded tokenizer and a small Qwen2 built from its config. A wider initialisation
    than the embedded model's gives varied greedy text (the embedded one repeats one token)."""
    from rlvr.models.tiny import TinyModelSpec, build_model, build_tokenizer

    tok = build_tokenizer()
    spec = TinyModelSpec(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=256,
    )
    model = build_model(spec, len(tok), tok.pad_token_id, tok.eos_token_id, initializer_range=0.3)
    return model.eval(), tok


def prompt_ids(tokenizer) -> list[list[int]]:
    return [ChatFormat().ids(tokenizer, p) for p in PROMPTS]


def hf_greedy(model, tokenizer, ids: list[list[int]], new: int, eos: int) -> list[list[int]]:
    """``model.generate`` on one left-padded batch, each row cut after its first end token."""
    pad, width = tokenizer.pad_token_id, max(len(p) for p in ids)
    batch = torch.tensor([[pad] * (width - len(p)) + p for p in ids])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in ids])
    with torch.no_grad():
        out = model.generate(
            input_ids=batch,
            attention_mask=mask,
            do_sample=False,
            max_new_tokens=new,
            pad_token_id=pad,
            eos_token_id=eos,
        )
    rows = out[:, width:].tolist()
    return [r[: r.index(eos) + 1] if eos in r else r for r in rows]


def end_token(rows) -> int:
    """A token some rows emit, first at different steps, and some rows never: as the end
    token, rows stop at different steps and some run to the limit."""
    rows = list(rows)
    varied = [
        t
        for t in sorted({t for r in rows for t in r})
        if len({r.index(t) for r in rows if t in r}) > 1 and any(t not in r for r in rows)
    ]
    assert varied, "the fixture model's greedy text has no such token"
    return max(varied, key=lambda t: sum(t in r for r in rows))


def greedy(new: int, eos: int, pad: int) -> Sampler:
    return Sampler(max_new_tokens=new, eos_token_ids=(eos,), pad_token_id=pad, greedy=True)


def test_greedy_equals_hf_generate(tiny):
    model, tok = tiny
    want = tok.batch_decode(hf_greedy(model, tok, prompt_ids(tok), 12, tok.eos_token_id), skip_special_tokens=True)
    for batch_size in (1, 4, 64):  # alone, split across batches, all in one batch
        got = generate(model, tok, PROMPTS, Decoding(greedy=True, max_new_tokens=12), batch_size)
        assert all(len(g) == 1 for g in got)  # k is ignored when greedy
        assert [g[0] for g in got] == want


def test_rows_that_end_early_leave_the_batch_and_the_rest_decode_as_before(tiny):
    model, tok = tiny
    ids = prompt_ids(tok)
    free = sample_tokens(model, ids, greedy(16, tok.eos_token_id, tok.pad_token_id)).ids
    end = end_token(r[0] for r in free)
    rows: list[int] = []  # rows in each forward call
    hook = model.register_forward_pre_hook(
        lambda _, args, kwargs: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    try:
        ended = sample_tokens(model, ids, greedy(16, end, tok.pad_token_id)).ids
    finally:
        hook.remove()
    # a row decodes while it has not ended (6 rows: each ended row leaves at once)
    lengths = [len(c[0]) for c in ended]
    assert rows == [len(ids)] + [sum(n > i for n in lengths) for i in range(1, max(lengths))]
    assert rows[-1] < len(ids)
    for full, cut in zip(free, ended, strict=True):
        stop = full[0].index(end) + 1 if end in full[0] else len(full[0])
        assert cut[0] == full[0][:stop]
    assert [c[0] for c in ended] == hf_greedy(model, tok, ids, 16, end)


def test_sampling_is_seeded_and_leaves_the_global_generator_alone(tiny):
    model, tok = tiny
    decoding = Decoding(k=3, temperature=1.0, max_new_tokens=8)
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    first = generate(model, tok, PROMPTS, decoding, batch_size=8, seed=5)
    assert torch.equal(torch.rand(1), before), "generation moved torch's global generator"
    assert first == generate(model, tok, PROMPTS, decoding, batch_size=8, seed=5)
    assert first != generate(model, tok, PROMPTS, decoding, batch_size=8, seed=6)


def test_k_samples_per_prompt_come_back_in_input_order(tiny):
    model, tok = tiny
    alone = [generate(model, tok, [p], Decoding(greedy=True, max_new_tokens=8))[0] for p in PROMPTS]
    # a nucleus this small keeps only the most likely token: every sample is the greedy one
    narrow = Decoding(k=4, top_p=1e-6, max_new_tokens=8)
    for batch_size in (4, 64):
        got = generate(model, tok, PROMPTS, narrow, batch_size)
        assert [len(g) for g in got] == [4] * len(PROMPTS)
        assert got == [a * 4 for a in alone]
    sampled = generate(model, tok, PROMPTS, Decoding(k=4, max_new_tokens=8), batch_size=8)
    assert any(len(set(g)) > 1 for g in sampled), "k samples of a prompt were not drawn apart"


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_samples_are_drawn_from_the_models_distribution(tiny, temperature):
    """The log-probs the loop samples from (shared, expanded and compacted cache, left padding)
    are those of one full forward over each finished sequence."""
    model, tok = tiny
    ids = prompt_ids(tok)
    sampler = sampler_for(tok, model, Decoding(temperature=temperature, max_new_tokens=10))
    generator = torch.Generator().manual_seed(1)
    out = sample_tokens(model, ids, sampler, k=3, generator=generator, logprobs=True)
    assert out.logprobs is not None
    for prompt, completions, logps in zip(ids, out.ids, out.logprobs, strict=True):
        assert len(completions) == 3
        for completion, lp in zip(completions, logps, strict=True):
            assert 1 <= len(completion) == len(lp) <= 10
            with torch.no_grad():
                logits = model(torch.tensor([prompt + completion])).logits[0].float()
            want = torch.log_softmax(logits[len(prompt) - 1 : -1] / temperature, -1)
            want = want.gather(1, torch.tensor(completion)[:, None]).squeeze(1)
            assert torch.allclose(torch.tensor(lp), want, atol=1e-4)


def test_draw_follows_the_probabilities_and_never_picks_zero_mass():
    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2, 0.0]]).repeat(100_000, 1)
    picks = draw(probs, torch.Generator().manual_seed(0))
    freq = torch.bincount(picks, minlength=5).float() / len(picks)
    assert freq[1] == 0 and freq[4] == 0
    assert torch.allclose(freq, probs[0], atol=0.01)
    assert torch.equal(nucleus(probs[:1], 0.7) > 0, torch.tensor([[True, False, True, False, False]]))


def test_empty_inputs_and_settings_that_cannot_sample(tiny):
    model, tok = tiny
    assert generate(model, tok, [], Decoding(k=2)) == []
    none = Sampler(max_new_tokens=0, eos_token_ids=(1,), pad_token_id=0)
    assert sample_tokens(model, [[5, 6]], none, k=2, generator=torch.Generator()).ids == [[[], []]]
    with pytest.raises(ValueError, match="Generator"):
        sample_tokens(model, [[5, 6]], Sampler(max_new_tokens=2, eos_token_ids=(1,), pad_token_id=0))
    with pytest.raises(ValueError, match="temperature"):
        Sampler(max_new_tokens=4, eos_token_ids=(1,), pad_token_id=0, temperature=0.0)


def test_sliding_window_models_decode_as_hf_generate_does(tiny):
    """The sampler's cache grows in place for full-attention models; a model with
    sliding-window layers keeps transformers' own cache, which crops those layers, and
    decodes greedily as ``model.generate`` does past the window."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rlvr.evaluation.kv_rows import GrowingLayer
    from rlvr.evaluation.sampling import _new_cache

    model, tok = tiny
    assert _new_cache(model).layer_class_to_replicate is GrowingLayer
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        use_sliding_window=True,
        sliding_window=6,
        max_window_layers=1,
        layer_types=["full_attention", "sliding_attention"],
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        initializer_range=0.3,
    )
    torch.manual_seed(0)
    windowed = Qwen2ForCausalLM(config).eval()
    assert not isinstance(_new_cache(windowed).layers[1], GrowingLayer)
    ids = prompt_ids(tok)
    got = sample_tokens(windowed, ids, greedy(12, tok.eos_token_id, tok.pad_token_id)).ids
    assert [g[0] for g in got] == hf_greedy(windowed, tok, ids, 12, tok.eos_token_id)
