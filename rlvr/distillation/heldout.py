"""Held-out KL of a student to its teachers, per domain, on one rank or added over several.

The exact per-token KL(student || teacher) over the whole next-token distribution, on
completions the student samples for held-out rows.

``kl_sums`` scores one process's rows and returns sums that add across processes;
``heldout_kl`` turns sums into means. Teachers sharded over the ranks (FSDP2) gather their
weights in every forward, a collective: with ``lockstep`` every rank runs the same number of
batches and, in each, every teacher in one order, on a stand-in row where it has none of the
teacher's domain (its result discarded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from rlvr.distillation.teachers import completion_logprobs

Sums = dict[str, list[float]]  # domain -> [KL summed over tokens, tokens, prompts]


def completion_mask(completion_ids: torch.Tensor, eos_ids: set[int]) -> torch.Tensor:
    """1 up to and including each row's first end token, 0 after it."""
    is_end = torch.zeros_like(completion_ids, dtype=torch.bool)
    for eos in eos_ids:
        is_end |= completion_ids == eos
    ended_before = (is_end.cumsum(dim=1) - is_end.long()) > 0
    return (~ended_before).long()


def batches_per_rank(rows: int, world: int, batch_size: int, samples: int) -> int:
    """Batches the busiest rank runs when ``rows`` are dealt round-robin over ``world`` ranks."""
    per_batch = max(1, batch_size // samples)
    return math.ceil(math.ceil(rows / world) / per_batch)


def _sample(
    student: Any,
    tokenizer: Any,
    part: list[dict],
    chat: Any,
    eos: set[int],
    *,
    samples: int,
    max_new_tokens: int,
    temperature: float,
) -> dict[str, torch.Tensor]:
    """``samples`` completions the student draws for each row of ``part``, as a scoring batch."""
    device = next(student.parameters()).device
    enc = tokenizer(
        chat.texts(tokenizer, [r["prompt"] for r in part]),
        return_tensors="pt",
        padding=True,
        padding_side="left",
        add_special_tokens=False,
    ).to(device)
    out = student.generate(
        **enc,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        num_return_sequences=samples,
        max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=sorted(eos),
    )
    completion = out[:, enc["input_ids"].shape[1] :]
    return {
        "prompt_ids": enc["input_ids"].repeat_interleave(samples, dim=0),
        "prompt_mask": enc["attention_mask"].repeat_interleave(samples, dim=0),
        "completion_ids": completion,
        "completion_mask": completion_mask(completion, eos),
    }


def _score(
    batch: dict[str, torch.Tensor],
    s_logp: torch.Tensor,
    teachers: Mapping[str, Any],
    part: list[dict],
    domains: list[str],
    samples: int,
    temperature: float,
    totals: Sums,
) -> None:
    """Each domain's rows of ``batch`` scored by its teacher; sums added to ``totals``."""
    device = s_logp.device
    for domain in domains:
        rows = [j * samples + s for j, r in enumerate(part) if r["domain"] == domain for s in range(samples)]
        index = torch.tensor(rows or [0], device=device)  # a stand-in row keeps the lockstep
        sub = {k: v[index] for k, v in batch.items()}
        _, t_logits = completion_logprobs(teachers[domain], sub, temperature, False)
        if not rows:
            continue
        t_logp = torch.log_softmax(t_logits.float(), dim=-1)
        mine = s_logp[index]
        kl = (mine.exp() * (mine - t_logp)).sum(-1) * sub["completion_mask"]
        acc = totals.setdefault(domain, [0.0, 0.0, 0.0])
        acc[0] += float(kl.sum())
        acc[1] += float(sub["completion_mask"].sum())
        acc[2] += len(rows) // samples


@torch.no_grad()
def kl_sums(
    student: Any,
    teachers: Mapping[str, Any],
    tokenizer: Any,
    rows: list[dict],
    *,
    samples: int = 4,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 64,
    chat: Any = None,
    lockstep: tuple[int, dict] | None = None,
) -> Sums:
    """Per domain, the KL summed over completion tokens, the tokens and the prompts.

    ``teachers`` maps domains to models. ``lockstep=(batches, stand_in_row)``: run exactly
    ``batches`` batches (the stand-in row where this rank has run out) and every teacher in
    each. Prompts render with ``chat`` (a ``ChatFormat``: the run's template options)."""
    from rlvr.models.chat_format import ChatFormat, stop_token_ids

    chat = chat or ChatFormat()
    eos = set(stop_token_ids(tokenizer, student.generation_config))
    totals: Sums = {}
    torch.manual_seed(seed)
    student.eval()
    per_batch = max(1, batch_size // samples)
    parts = [rows[i : i + per_batch] for i in range(0, len(rows), per_batch)]
    if lockstep is not None:
        parts += [[]] * (lockstep[0] - len(parts))
    for part in parts:
        scored = part or [lockstep[1]]  # type: ignore[index]  (empty parts: lockstep only)
        batch = _sample(
            student,
            tokenizer,
            scored,
            chat,
            eos,
            samples=samples,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
        )
        _, s_logits = completion_logprobs(student, batch, temperature, keep_kwarg=False)
        s_logp = torch.log_softmax(s_logits.float(), dim=-1)
        domains = sorted(teachers) if lockstep else list(dict.fromkeys(r["domain"] for r in part))
        _score(batch, s_logp, teachers, part, domains, samples, temperature, totals)
    return totals


def add_sums(parts: list[Sums]) -> Sums:
    """Several processes' sums as one."""
    out: Sums = {}
    for sums in parts:
        for domain, values in sums.items():
            acc = out.setdefault(domain, [0.0, 0.0, 0.0])
            for i, value in enumerate(values):
                acc[i] += value
    return out


def kl_means(sums: Sums) -> dict[str, dict[str, float]]:
    """``{domain: {"kl", "tokens", "prompts"}}``: the KL per completion token."""
    return {d: {"kl": s / max(n, 1.0), "tokens": n, "prompts": int(p)} for d, (s, n, p) in sorted(sums.items())}


def heldout_kl(
    student: Any, teachers: Mapping[str, Any], tokenizer: Any, rows: list[dict], **kwargs: Any
) -> dict[str, dict[str, float]]:
    """Per domain, KL(student || the domain's teacher) per completion token over completions
    the student samples for ``rows`` (one process; ``kl_sums``'s keyword arguments).

    Teachers are models (local teachers only: a server returns no full distribution)."""
    return kl_means(kl_sums(student, teachers, tokenizer, rows, **kwargs))
