"""The embedded tiny model: identity tokenizer, chat template, deterministic cached build."""

from __future__ import annotations

import random
import string

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlvr.models.tiny import THINK_CLOSE, THINK_OPEN, TinyModelSpec, ensure_tiny_model

TEXTS = [
    "Answer: 7",
    "a\tb\n c  d",
    "  leading and trailing  ",
    "\n\n\t",
    "<think>3+4=7</think>\nAnswer: 7",
    "héllo ✓ 日本語 \u00a0 emoji 🙂",
    string.printable,
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.mark.parametrize("text", TEXTS)
def test_encode_decode_identity(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text


def test_identity_on_random_printable_text(tokenizer):
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 80)))
        assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text


def test_think_markers_are_single_tokens_and_survive_skip_special(tokenizer):
    for marker in (THINK_OPEN, THINK_CLOSE):
        assert len(tokenizer(marker, add_special_tokens=False)["input_ids"]) == 1
    ids = tokenizer("<think>x</think>y<|im_end|>", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "<think>x</think>y"


def test_chat_template_marks_assistant_tokens(tokenizer):
    msgs = [
        {"role": "user", "content": "3+4"},
        {"role": "assistant", "content": "<think>7</think>Answer: 7"},
    ]
    text = tokenizer.apply_chat_template(msgs, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n<think>7</think>Answer: 7<|im_end|>\n")
    enc = tokenizer.apply_chat_template(msgs, return_dict=True, return_assistant_tokens_mask=True)
    masked = [t for t, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m]
    assert tokenizer.decode(masked) == "<think>7</think>Answer: 7<|im_end|>"
    prompt = tokenizer.apply_chat_template(msgs[:1], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")


def test_build_is_deterministic_and_cached(tmp_path):
    spec = TinyModelSpec(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
    )
    a = ensure_tiny_model(tmp_path / "a", spec)
    b = ensure_tiny_model(tmp_path / "b", spec)
    assert ensure_tiny_model(tmp_path / "a", spec) == a  # reused, not rebuilt
    wa = AutoModelForCausalLM.from_pretrained(a).state_dict()
    wb = AutoModelForCausalLM.from_pretrained(b).state_dict()
    assert all((wa[k] == wb[k]).all() for k in wa)
    assert not list((tmp_path / "a").glob(".tiny-*")), "staging folder left behind"
