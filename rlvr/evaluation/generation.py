"""Batched generation for evaluation: k samples per prompt (or greedy), in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from rlvr.evaluation.sampling import Sampler, sample_tokens
from rlvr.models.chat_format import ChatFormat, pad_token_id, stop_token_ids

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decoding:
    k: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    greedy: bool = False  # greedy decoding: one completion per prompt, k ignored


def generate(
    model,
    tokenizer,
    prompts: Sequence[Sequence[dict]],
    decoding: Decoding,
    batch_size: int = 64,
    seed: int = 0,
    chat: ChatFormat | None = None,
) -> list[list[str]]:
    """Completions per prompt (k of them, or one when greedy), in input order.

    ``batch_size`` bounds the rows decoded together (prompts x samples); prompts of similar
    length share a batch. Sampling draws from a generator seeded by ``seed`` alone. Prompts
    render with ``chat`` (the training run's chat template options).
    """
    import torch

    if not prompts:
        return []
    ids = prompt_ids(tokenizer, prompts, chat or ChatFormat())
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths batch well
    per_prompt = 1 if decoding.greedy else decoding.k
    prompts_per_batch = max(1, batch_size // per_prompt)
    sampler = sampler_for(tokenizer, model, decoding)
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    results: list[list[str]] = [[] for _ in ids]
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


def prompt_ids(tokenizer, prompts: Sequence[Sequence[dict]], chat: ChatFormat) -> list[list[int]]:
    """Each prompt's token ids as training saw them (``ChatFormat.ids``)."""
    return [chat.ids(tokenizer, p) for p in prompts]


def sampler_for(tokenizer, model, decoding: Decoding) -> Sampler:
    """The decoding's distribution, ending at the ids TRL's training stops at."""
    stops = stop_token_ids(tokenizer, getattr(model, "generation_config", None))
    return Sampler(
        max_new_tokens=decoding.max_new_tokens,
        eos_token_ids=stops,
        pad_token_id=pad_token_id(tokenizer, stops),
        temperature=decoding.temperature,
        top_p=decoding.top_p,
        greedy=decoding.greedy,
    )
