"""Micro-suite parallel math: sums of independent sub-sums, demonstrated as fork-join threads.

"Compute (3+4)+(5+2)." is scored by the ``math`` verifier (domain ``math``, task
``micro_parallel_math``). Its demonstration outlines one thread per sub-sum, computes each in
its ``<Thread>``, and joins the results sequentially (``verifiers.parallel_format`` layout)::

    <think><Parallel><Outlines><Outline>1: 3+4</Outline><Outline>2: 5+2</Outline></Outlines>
    <Thread>1: 3+4=7</Thread><Thread>2: 5+2=7</Thread></Parallel>7+7=14</think>
    Answer: 14

(without the line breaks). So that an acceleration reward has alternatives to choose from,
a share of the demonstrations, fixed by a hash of the prompt, is written differently:
``SEQUENTIAL_SHARE`` as one sequential chain (no block), and on levels with three sub-sums
``PAIRED_SHARE`` as two threads, the first taking two sub-sums (a longer critical path).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, hash_fraction, think

NAME = "parallel_math"  # micro-suite task micro_parallel_math; rows are domain math
LEVELS: tuple[int, ...] = (1, 2)  # level = number of sub-sums - 1
SEQUENTIAL_SHARE = 0.1
PAIRED_SHARE = 0.35  # of the rows with three sub-sums

# sub-sums a+b of digits 1-9 with a single-digit result, so threads and join stay short
_PAIRS = [(a, b) for a in range(1, 10) for b in range(1, 10) if a + b <= 9]


def _space(level: int) -> list[tuple[tuple[int, int], ...]]:
    if level == 1:
        return [(p, q) for p in _PAIRS for q in _PAIRS]
    if level == 2:
        return [(p, q, r) for p in _PAIRS for q in _PAIRS for r in _PAIRS]
    raise ValueError(f"micro/{NAME} has no level {level}; levels are {LEVELS}")


def _prompt(problem: tuple[tuple[int, int], ...]) -> str:
    return "Compute " + "+".join(f"({a}+{b})" for a, b in problem) + "."


def _render(problem: tuple[tuple[int, int], ...], rng: random.Random) -> tuple[str, dict]:
    return _prompt(problem), {"answer": str(sum(a + b for a, b in problem))}


SPEC = DomainSpec("math", "math", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    """Rows of domain ``math`` whose ids and source name this task (``micro-parallel_math``)."""
    rows = generate_rows(SPEC, n, seed, difficulty, split)
    for row in rows:
        row["id"] = row["id"].replace("micro-math-", f"micro-{NAME}-", 1)
        row["source"] = f"micro/{NAME}/{split}"
    return rows


_PROMPT = re.compile(r"Compute ((?:\(\d\+\d\)\+?)+)\.")
_PAIR = re.compile(r"\((\d)\+(\d)\)")


def parse_prompt(prompt: str) -> tuple[tuple[int, int], ...] | None:
    match = _PROMPT.fullmatch(prompt.strip())
    if match is None:
        return None
    return tuple((int(a), int(b)) for a, b in _PAIR.findall(match.group(1)))


def _style(prompt: str, parts: int) -> str:
    u = hash_fraction(f"{NAME}:style:{prompt}")
    if u < SEQUENTIAL_SHARE:
        return "sequential"
    if parts >= 3 and u < SEQUENTIAL_SHARE + PAIRED_SHARE * (1 - SEQUENTIAL_SHARE):
        return "paired"
    return "balanced"


def parallel_block(groups: list[list[tuple[int, int]]]) -> str:
    """One block, one thread per group of sub-sums, each outlined first."""
    plans = [", ".join(f"{a}+{b}" for a, b in g) for g in groups]
    works = [", ".join(f"{a}+{b}={a + b}" for a, b in g) for g in groups]
    outlines = "".join(f"<Outline>{i}: {p}</Outline>" for i, p in enumerate(plans, 1))
    threads = "".join(f"<Thread>{i}: {w}</Thread>" for i, w in enumerate(works, 1))
    return f"<Parallel><Outlines>{outlines}</Outlines>{threads}</Parallel>"


def reasoning(problem: tuple[tuple[int, int], ...], style: str) -> str:
    """The ``<think>`` body of a demonstration in one of the three styles."""
    values = [a + b for a, b in problem]
    join = "+".join(str(v) for v in values) + f"={sum(values)}"
    if style == "sequential":
        return ", ".join(f"{a}+{b}={a + b}" for a, b in problem) + f", {join}"
    pairs = list(problem)
    groups = [pairs[:2], *[[p] for p in pairs[2:]]] if style == "paired" else [[p] for p in pairs]
    return parallel_block(groups) + join


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: sub-sums in threads (or one of the alternatives), the join, the answer."""
    problem = parse_prompt(prompt)
    answer = f"Answer: {reference['answer']}"
    if not problem:
        return think(str(reference["answer"]), answer)
    return think(reasoning(problem, _style(prompt, len(problem))), answer)
