"""Micro-suite math: graded integer arithmetic with a worked ``<think>`` line and ``Answer: N``."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, think

# Level -> problems as (a, op, b[, op2, c]) tuples; ordered by what a tiny model learns first.
LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)

_DIGITS = range(10)
_TWO = range(10, 100)


def _space(level: int) -> list[tuple[Any, ...]]:
    if level == 1:  # single-digit sums
        return [(a, "+", b) for a in _DIGITS for b in _DIGITS]
    if level == 2:  # single-digit differences (non-negative) and products
        subs = [(a, "-", b) for a in _DIGITS for b in _DIGITS if a >= b]
        return subs + [(a, "*", b) for a in _DIGITS for b in _DIGITS]
    if level == 3:  # three single-digit terms
        return [(a, "+", b, "+", c) for a in _DIGITS for b in _DIGITS for c in _DIGITS]
    if level == 4:  # two-digit +/- one-digit
        return [(a, op, b) for a in _TWO for b in range(1, 10) for op in "+-"]
    if level == 5:  # two-digit sums and two-digit times one-digit
        sums = [(a, "+", b) for a in _TWO for b in _TWO]
        return sums + [(a, "*", b) for a in _TWO for b in range(2, 10)]
    raise ValueError(f"micro/math has no level {level}")


def expression(problem: tuple[Any, ...]) -> str:
    return "".join(str(part) for part in problem)


def _evaluate(problem: tuple[Any, ...]) -> int:
    value = problem[0]
    for op, operand in zip(problem[1::2], problem[2::2], strict=True):
        value = value + operand if op == "+" else value - operand if op == "-" else value * operand
    return value


def _render(problem: tuple[Any, ...], rng: random.Random) -> tuple[str, dict[str, Any]]:
    return f"Compute {expression(problem)}.", {"answer": str(_evaluate(problem))}


SPEC = DomainSpec("math", "math", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    return generate_rows(SPEC, n, seed, difficulty, split)


_PROMPT = re.compile(r"Compute (\d+)([+*-])(\d+)(?:([+*-])(\d+))?\.")


def _steps(problem: tuple[Any, ...]) -> str:
    """Short scratch work: split two-digit operands by tens, chain three-term sums."""
    a, op, b = problem[:3]
    if len(problem) == 5:
        ab = _evaluate(problem[:3])
        return f"{a}{op}{b}={ab}, {ab}{problem[3]}{problem[4]}={_evaluate(problem)}"
    if a >= 10 and b >= 10 and op == "+" and b % 10:  # 47+35: 47+30=77, 77+5=82
        tens = b - b % 10
        return f"{a}+{tens}={a + tens}, {a + tens}+{b % 10}={a + b}"
    if a >= 10 and op == "*":  # 47*6: 40*6=240, 7*6=42, 282
        hi, lo = a - a % 10, a % 10
        return f"{hi}*{b}={hi * b}, {lo}*{b}={lo * b}, {_evaluate(problem)}"
    return f"{expression(problem)}={_evaluate(problem)}"


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: the worked steps in ``<think>``, then ``Answer: N``."""
    match = _PROMPT.fullmatch(prompt.strip())
    if match is None:
        return think(str(reference["answer"]), f"Answer: {reference['answer']}")
    parts = [p for p in match.groups() if p is not None]
    problem = tuple(int(p) if p.isdigit() else p for p in parts)
    return think(_steps(problem), f"Answer: {reference['answer']}")
