"""Batched generation with transformers: k samples per prompt and greedy, left-padded."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decoding:
    k: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    greedy: bool = False  # greedy decoding: one completion per prompt, k ignored


def render_prompts(
    tokenizer, prompts: Sequence[Sequence[dict]], chat_template_kwargs: dict | None = None
) -> list[str]:
    kwargs = chat_template_kwargs or {}
    return [
        tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True, **kwargs)
        for p in prompts
    ]


def generate(
    model,
    tokenizer,
    prompts: Sequence[Sequence[dict]],
    decoding: Decoding,
    batch_size: int = 64,
    seed: int = 0,
) -> list[list[str]]:
    """Completions per prompt (k of them, or one when greedy), in input order."""
    import torch

    texts = render_prompts(tokenizer, prompts)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths batch well
    per_prompt = 1 if decoding.greedy else decoding.k
    prompts_per_batch = max(1, batch_size // per_prompt)
    results: list[list[str]] = [[] for _ in texts]
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    gen_kwargs: dict[str, Any] = {
        "max_new_tokens": decoding.max_new_tokens,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    if decoding.greedy:
        gen_kwargs["do_sample"] = False
    else:
        gen_kwargs.update(
            do_sample=True,
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            top_k=0,
            num_return_sequences=per_prompt,
        )
    device = next(model.parameters()).device
    with torch.inference_mode():
        for start in range(0, len(order), prompts_per_batch):
            idx = order[start : start + prompts_per_batch]
            enc = tokenizer(
                [texts[i] for i in idx],
                return_tensors="pt",
                padding=True,
                padding_side="left",
                add_special_tokens=False,
            ).to(device)
            out = model.generate(**enc, **gen_kwargs)
            new_tokens = out[:, enc["input_ids"].shape[1] :]
            decoded = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            for j, i in enumerate(idx):
                results[i] = decoded[j * per_prompt : (j + 1) * per_prompt]
    model.train(was_training)
    return results
