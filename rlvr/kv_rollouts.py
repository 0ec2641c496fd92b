"""GRPO's single-turn rollouts from the KV-cache sampler instead of TRL's ``model.generate``.

TRL 1.16's transformers path left-pads a generation batch, in which every prompt appears once
per completion, and calls ``model.generate``: each copy of a prompt is prefilled again, every
row decodes until the longest one ends, and the cache is concatenated at every step. Here the
batch's distinct prompts are prefilled once and their caches repeated for their completions,
finished rows leave the batch and the cache grows in place (``rlvr.evaluation.sampling``, the
evaluation sampler). The distribution is TRL's: temperature, then top-p, its end tokens and
``max_completion_length``; the completions are ids up to and including the first end token, as
TRL cuts them. Draws come from a generator seeded from torch's global one, so a run is as
reproducible from its seed as TRL's own path (whose draws differ token for token from these).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def unsupported(trainer: Any) -> str | None:
    """Why this trainer's generation must stay TRL's (None: the KV-cache sampler can draw it)."""
    if trainer.accelerator.num_processes > 1:
        # ranks would run different numbers of forwards (their rows end at different steps),
        # and FSDP's and ZeRO-3's gathers need every rank in each; TRL's generate syncs them
        return "several processes"
    if trainer.use_vllm or trainer.use_transformers_continuous_batching or trainer._is_vlm:
        return "generation is not plain transformers on a text model"
    if trainer.args.generation_kwargs or trainer.top_k or trainer.min_p:
        return "sampling settings beyond temperature and top-p"
    if trainer.repetition_penalty != 1.0:
        return "a repetition penalty"
    return None


def sample_completions(trainer: Any, prompt_ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """One completion per prompt of the batch, in order, in TRL's generation context
    (unwrapped model, no gradient checkpointing, full FSDP parameters)."""
    import torch
    from trl.extras.profiling import profiling_context
    from trl.models import unwrap_model_for_generation

    from rlvr.evaluation.sampling import Sampler, sample_tokens

    distinct, samples_of = group_prompts(prompt_ids)
    eos = tuple(trainer.eos_token_ids)
    pad = trainer._tokenizer.pad_token_id
    sampler = Sampler(
        max_new_tokens=trainer.max_completion_length,
        eos_token_ids=eos,
        pad_token_id=eos[0] if pad is None else pad,
        temperature=trainer.temperature,
        top_p=trainer.top_p,
    )
    k = len(prompt_ids) // len(distinct) if samples_of is not None else 1
    prompts = distinct if samples_of is not None else [list(p) for p in prompt_ids]
    with (
        profiling_context(trainer, "transformers.generate"),
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
        trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
    ):
        device = next(model.parameters()).device
        seed = int(torch.randint(0, 2**62, (1,)).item())  # torch's global generator moves on
        generator = torch.Generator(device=device).manual_seed(seed)
        drawn = sample_tokens(model, prompts, sampler, k=k, generator=generator).ids
    if samples_of is None:
        return [group[0] for group in drawn]
    return [drawn[prompt][n] for prompt, n in samples_of]


def group_prompts(
    prompt_ids: Sequence[Sequence[int]],
) -> tuple[list[list[int]], list[tuple[int, int]] | None]:
    """The distinct prompts, and for each row (its distinct prompt, which of its samples);
    None when the prompts do not all repeat equally often (then each row is drawn alone)."""
    index: dict[tuple[int, ...], int] = {}
    distinct: list[list[int]] = []
    counts: list[int] = []
    samples_of = []
    for ids in prompt_ids:
        key = tuple(ids)
        if key not in index:
            index[key] = len(distinct)
            distinct.append(list(ids))
            counts.append(0)
        j = index[key]
        samples_of.append((j, counts[j]))
        counts[j] += 1
    if not distinct or len(set(counts)) != 1:
        return distinct, None
    return distinct, samples_of
