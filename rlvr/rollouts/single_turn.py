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

from collections.abc import Callable, Sequence
from typing import Any

from rlvr.rollouts import generation_context
from rlvr.training import trl_seam

Finished = Callable[[list[int], list[list[int]]], None]  # (batch rows, their completion ids)


def sample_completions(
    trainer: Any, prompt_ids: Sequence[Sequence[int]], on_finished: Finished | None = None
) -> list[list[int]]:
    """One completion per prompt of the batch, in order, in TRL's generation context;
    ``on_finished(rows, ids)`` hears of the batch rows that end while others still decode."""
    import torch

    from rlvr.evaluation.sampling import Sampler

    eos = tuple(trainer.eos_token_ids)
    pad = trl_seam.tokenizer(trainer).pad_token_id
    sampler = Sampler(
        max_new_tokens=trainer.max_completion_length,
        eos_token_ids=eos,
        pad_token_id=eos[0] if pad is None else pad,
        temperature=trainer.temperature,
        top_p=trainer.top_p,
    )
    with generation_context(trainer) as model:
        device = next(model.parameters()).device
        seed = int(torch.randint(0, 2**62, (1,)).item())  # torch's global generator moves on
        generator = torch.Generator(device=device).manual_seed(seed)
        return sample_rows(model, prompt_ids, sampler, generator, on_finished=on_finished)[0]


def scoring_ahead(trainer: Any, prompt_ids: Sequence[Sequence[int]], inputs: Sequence[dict] | None) -> Finished | None:
    """A hook that hands rows ending while the batch still decodes to the reward bridge, which
    grades them on a background thread (``rlvr.rewards.early``): each row's text is built as
    TRL will build it for the reward functions (parsed with the tokenizer's response template
    where it has one). None where the bridge is not the reward or rows run in environments."""
    from trl.chat_template_utils import parse_response
    from trl.data_utils import is_conversational

    from rlvr.data.agent import rollout_text
    from rlvr.rewards.bridge import bridge_scores
    from rlvr.rewards.early import early_keys

    scores = bridge_scores(trainer.reward_funcs)
    if scores is None or inputs is None or len(inputs) != len(prompt_ids):
        return None
    if not inputs or any(key not in inputs[0] for key in ("domain", "reference", "verifier")):
        return None  # not rows of the canonical schema: the bridge grades them at its call
    if trainer.tools or trainer.environment_factories is not None:
        return None
    tokenizer, chat = trl_seam.tokenizer(trainer), is_conversational(inputs[0])
    parsed = chat and (
        getattr(tokenizer, "response_template", None) is not None
        or getattr(tokenizer, "response_schema", None) is not None
    )

    def completion(row: int, ids: list[int]) -> Any:  # as TRL 1.16's _generate decodes it
        if parsed:
            return [parse_response(tokenizer, ids, prefix=prompt_ids[row], tools=trainer.tools)]
        text = trainer.processing_class.decode(ids, skip_special_tokens=True)
        return [{"role": "assistant", "content": text}] if chat else text

    def finished(rows: list[int], ids: list[list[int]]) -> None:
        ready, texts = [], []
        for row, row_ids in zip(rows, ids, strict=True):
            try:
                texts.append(rollout_text(completion(row, row_ids)))
            except Exception:  # left to TRL's own decoding and the reward call
                continue
            ready.append(row)
        scores.early.submit(early_keys(ready, texts, inputs, scores.domains))

    return finished


def sample_rows(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    sampler: Any,
    generator: Any,
    logprobs: bool = False,
    on_finished: Finished | None = None,
) -> tuple[list[list[int]], list[list[float]] | None]:
    """One completion per row of a batch that repeats its prompts (and each sampled token's
    log-probability when ``logprobs``): each distinct prompt prefilled once for all its rows.
    ``on_finished`` is told of rows (positions in ``prompt_ids``) that end early."""
    from rlvr.evaluation.sampling import sample_tokens

    distinct, samples_of = group_prompts(prompt_ids)
    if samples_of is None:  # unequal repeats: every row drawn alone
        distinct, samples_of = (
            [list(p) for p in prompt_ids],
            [(n, 0) for n in range(len(prompt_ids))],
        )
    k = len(prompt_ids) // len(distinct) if distinct else 1
    heard = None
    if on_finished is not None:  # the sampler's rows (prompt p's sample n is p * k + n) -> ours
        row_of = {p * k + n: row for row, (p, n) in enumerate(samples_of)}

        def heard(rows: list[int], ids: list[list[int]]) -> None:
            on_finished([row_of[r] for r in rows], ids)

    drawn = sample_tokens(model, distinct, sampler, k, generator=generator, logprobs=logprobs, on_finished=heard)
    ids = [drawn.ids[p][n] for p, n in samples_of]
    scores = None if drawn.logprobs is None else [drawn.logprobs[p][n] for p, n in samples_of]
    return ids, scores


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
