"""Batched generation for evaluation: k samples per prompt (or greedy), in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from rlvr.evaluation.sampling import Sampler, sample_tokens

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
    """Completions per prompt (k of them, or one when greedy), in input order.

    ``batch_size`` bounds the rows decoded together (prompts x samples); prompts of similar
    length share a batch. Sampling draws from a generator seeded by ``seed`` alone.
    """
    import torch

    if not prompts:
        return []
    texts = render_prompts(tokenizer, prompts)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths batch well
    per_prompt = 1 if decoding.greedy else decoding.k
    prompts_per_batch = max(1, batch_size // per_prompt)
    sampler = sampler_for(tokenizer, model, decoding)
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    results: list[list[str]] = [[] for _ in texts]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), prompts_per_batch):
            idx = order[start : start + prompts_per_batch]
            samples = sample_tokens(model, [ids[i] for i in idx], sampler, per_prompt, generator)
            for i, completions in zip(idx, samples.ids, strict=True):
                results[i] = tokenizer.batch_decode(completions, skip_special_tokens=True)
    finally:
        model.train(was_training)
    return results


def sampler_for(tokenizer, model, decoding: Decoding) -> Sampler:
    """The decoding's distribution with the tokenizer's end token (the model's when it has none)."""
    eos = tokenizer.eos_token_id
    if eos is None:
        eos = model.generation_config.eos_token_id
    eos_ids = tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
    return Sampler(
        max_new_tokens=decoding.max_new_tokens,
        eos_token_ids=eos_ids,
        pad_token_id=pad,
        temperature=decoding.temperature,
        top_p=decoding.top_p,
        greedy=decoding.greedy,
    )
