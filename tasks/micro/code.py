"""Micro-suite code: one-line Python functions (call tests) and stdin/stdout programs."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, hash_fraction, think

LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)

# Level 3 states the function in words; each phrase maps to its Python expression.
_WORDS: dict[str, str] = {
    "x squared": "x*x",
    "x cubed": "x*x*x",
    "x doubled": "x*2",
    "x tripled": "x*3",
    "half of x": "x//2",
    "minus x": "-x",
    "last digit of x": "x%10",
    "abs of x": "abs(x)",
}
_WORDS_K: dict[str, str] = {
    "max of x and {k}": "max(x,{k})",
    "min of x and {k}": "min(x,{k})",
    "x mod {k}": "x%{k}",
    "x times {k}": "x*{k}",
    "x plus {k}": "x+{k}",
}
# Level 5 composes a level-3 phrase with one more operation: "x squared plus 3" -> x*x+3.
_THEN: dict[str, str] = {"plus": "+", "minus": "-", "times": "*"}
_XS = (-3, 0, 1, 2, 5, 7, 10, 13)


def _space(level: int) -> list[tuple[str, ...]]:
    """Canonical problems: (kind, description, python expression); kind picks the prompt."""
    ks = range(1, 10)
    if level == 1:  # the formula is given: copy it into a def
        return [("call1", f"x{op}{k}", f"x{op}{k}") for op in "+-*" for k in ks]
    if level == 2:  # two operations, one or two arguments
        one: list[tuple[str, ...]] = [("call1", f"x*{a}+{b}", f"x*{a}+{b}") for a in range(2, 10) for b in ks]
        two = [("call2", f"x{op}y*{k}", f"x{op}y*{k}") for op in "+-" for k in range(2, 10)]
        return one + two + [("call2", f"x*y{op}{k}", f"x*y{op}{k}") for op in "+-" for k in ks]
    if level == 3:  # described in words
        plain: list[tuple[str, ...]] = [("words", w, e) for w, e in _WORDS.items()]
        return plain + [("words", w.format(k=k), e.format(k=k)) for w, e in _WORDS_K.items() for k in range(2, 10)]
    if level == 4:  # a whole program on stdin/stdout
        return [("stdio", f"n{op}{k}", f"n{op}{k}") for op in "+-*" for k in ks]
    if level == 5:  # a phrase in words, then one more operation (evaluated left to right)
        return [
            ("words", f"{w} {then} {k}", f"{e}{op}{k}")
            for w, e in _WORDS.items()
            for then, op in _THEN.items()
            for k in range(2, 10)
        ]
    raise ValueError(f"micro/code has no level {level}")


def _cases_args(problem: tuple[str, ...]) -> list[list[int]]:
    """Four fixed-per-problem argument tuples, chosen by the problem's hash."""
    kind, _, expr = problem
    start = int(hash_fraction(expr) * len(_XS))
    xs = [_XS[(start + 2 * i) % len(_XS)] for i in range(4)]
    if kind == "call2":
        return [[x, _XS[(start + i + 3) % len(_XS)]] for i, x in enumerate(xs)]
    return [[x] for x in xs]


def _call(expr: str, args: list[int]) -> int:
    names = dict(zip(("x", "y"), args, strict=False))
    return eval(expr, {"__builtins__": {"abs": abs, "max": max, "min": min}}, names)  # noqa: S307 - our own fixed expressions


def _render(problem: tuple[str, ...], rng: random.Random) -> tuple[str, dict[str, Any]]:
    kind, text, expr = problem
    if kind == "stdio":
        cases: list[dict[str, Any]] = [
            {"input": f"{a[0]}\n", "output": f"{_call(expr.replace('n', 'x'), a)}\n"} for a in _cases_args(problem)
        ]
        return f"Python: read n, print {text}.", {"style": "stdio", "cases": cases}
    args = "x,y" if kind == "call2" else "x"
    cases = [{"args": a, "expected": _call(expr, a)} for a in _cases_args(problem)]
    prompt = f"Python f(x): {text}." if kind == "words" else f"Write f({args})={text} in Python."
    return prompt, {"style": "call", "fn_name": "f", "cases": cases}


SPEC = DomainSpec("code", "code", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    return generate_rows(SPEC, n, seed, difficulty, split)


_FORMULA = re.compile(r"Write f\((x(?:,y)?)\)=(.+) in Python\.")
_STDIO = re.compile(r"Python: read n, print (.+)\.")
_WORDED = re.compile(r"Python f\(x\): (.+)\.")


_COMPOSED = re.compile(rf"(.+) ({'|'.join(_THEN)}) (\d+)")


def _expr_of_words(text: str) -> str:
    if text in _WORDS:
        return _WORDS[text]
    if (match := _COMPOSED.fullmatch(text)) and match.group(1) in _WORDS:
        phrase, then, k = match.groups()
        return f"{_WORDS[phrase]}{_THEN[then]}{k}"
    for words, expr in _WORDS_K.items():
        match = re.fullmatch(re.escape(words).replace(r"\{k\}", r"(\d+)"), text)
        if match:
            return expr.format(k=match.group(1))
    return "None"


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: the expression in ``<think>``, then a fenced Python block."""
    text = prompt.strip()
    if match := _STDIO.fullmatch(text):
        expr = match.group(1)
        return think(expr, f"```python\nn=int(input())\nprint({expr})\n```")
    if match := _FORMULA.fullmatch(text):
        args, expr = match.groups()
    else:
        worded = _WORDED.fullmatch(text)
        args, expr = "x", _expr_of_words(worded.group(1) if worded else "")
    return think(expr, f"```python\ndef f({args}): return {expr}\n```")
