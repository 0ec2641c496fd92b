"""Micro-suite science: multiple choice answered by reasoning over the quantities stated.

Every question gives its numbers; none needs a fact beyond a handful of unit factors. Level 1
compares two stated quantities (two options), level 2 converts a unit (three options), level 3
applies a relation such as speed = distance / time (four options). Distractors are the results
of the wrong operation on the same numbers, so guessing by size does not work. A canonical
problem is its quantities, so held-out rows ask number combinations never seen in training.
Options are listed value first, letter after ("1300 (A) 13000 (B)"), and demonstrations end
their working with the chosen option as listed: naming the letter is then a copy of what
follows the computed value in the prompt, which a tiny model learns (with the letter first it
sampled at chance after 400 SFT steps; level 2 went from 31.6 to 44.1 Avg@8, chance 33).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, think

LETTERS = "ABCD"
LEVELS: tuple[int, ...] = (1, 2, 3)  # level L shows L+1 options

# Level 1: (question word, unit, True when the larger value wins) over pairs of objects.
COMPARISONS: tuple[tuple[str, str, bool], ...] = (
    ("Heavier", "kg", True),
    ("Lighter", "kg", False),
    ("Longer", "m", True),
    ("Shorter", "m", False),
    ("Hotter", "C", True),
    ("Colder", "C", False),
    ("Faster", "m/s", True),
    ("Slower", "m/s", False),
)
OBJECTS: tuple[str, ...] = ("rock", "box", "ball", "rope", "cart", "cup")

# Level 2: (from unit, to unit, factor); the answer is value * factor.
CONVERSIONS: tuple[tuple[str, str, int], ...] = (
    ("km", "m", 1000),
    ("kg", "g", 1000),
    ("L", "mL", 1000),
    ("m", "cm", 100),
    ("min", "s", 60),
    ("h", "min", 60),
)

# Level 3: (name, question template, answer unit, operation) with the two stated numbers a, b.
RELATIONS: tuple[tuple[str, str, str, str], ...] = (
    ("speed", "{a} m in {b} s. Speed (m/s)?", "m/s", "/"),
    ("force", "{a} kg at {b} m/s2. Force (N)?", "N", "*"),
    ("distance", "{a} m/s for {b} s. Distance (m)?", "m", "*"),
    ("density", "{a} g in {b} cm3. Density (g/cm3)?", "g/cm3", "/"),
)


_COMPARISON_BY_WORD = {word: (unit, larger) for word, unit, larger in COMPARISONS}
_CONVERSION_BY_SOURCE = {src: (dst, factor) for src, dst, factor in CONVERSIONS}
_RELATION_BY_NAME = {name: (template, unit, op) for name, template, unit, op in RELATIONS}


def _space(level: int) -> list[tuple[Any, ...]]:
    """Canonical problems as plain tuples, so their hash (and the split) is stable."""
    if level == 1:
        return [
            (word, x, y, a, b)
            for word, _, _ in COMPARISONS
            for i, x in enumerate(OBJECTS)
            for y in OBJECTS[i + 1 :]
            for a in range(1, 10)
            for b in range(1, 10)
            if a != b
        ]
    if level == 2:
        return [(src, value) for src, _, _ in CONVERSIONS for value in range(1, 25)]
    if level == 3:
        problems = []
        for name, _, _, op in RELATIONS:
            for b in range(2, 10):
                # quotients: the dividend is a multiple of b, so every answer is a whole number
                for a in [b * q for q in range(2, 10)] if op == "/" else range(2, 10):
                    problems.append((name, a, b))
        return problems
    raise ValueError(f"micro/science has no level {level}")


def _apply(op: str, a: int, b: int) -> int:
    return {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]


def _comparison(problem: tuple[Any, ...]) -> tuple[str, list[str], str, str]:
    word, x, y, a, b = problem
    unit, larger = _COMPARISON_BY_WORD[word]
    winner = x if (a > b) == larger else y
    question = f"{x.capitalize()} {a} {unit}, {y} {b} {unit}. {word}?"
    return question, [x, y], winner, f"{max(a, b)}>{min(a, b)}"  # no "<" inside <think>


def _conversion(problem: tuple[Any, ...]) -> tuple[str, list[str], str, str]:
    src, value = problem
    dst, factor = _CONVERSION_BY_SOURCE[src]
    others = [f for f in (10, 100, 1000, 60, 24) if f != factor]
    wrong = [others[(value + i) % len(others)] for i in (0, 2)]  # varies with the value
    options = [str(value * f) for f in (factor, *wrong)]
    return f"{value} {src} in {dst}?", options, options[0], f"{value}*{factor}={value * factor}"


def _relation(problem: tuple[Any, ...]) -> tuple[str, list[str], str, str]:
    name, a, b = problem
    template, _, op = _RELATION_BY_NAME[name]
    right = _apply(op, a, b)
    # the other operations on the same numbers first, then near misses of the right answer
    candidates = [a * b, a + b, abs(a - b), a // b if a % b == 0 else 0, right + b, 2 * right]
    wrong = [v for v in dict.fromkeys(candidates) if v not in (right, 0)][:3]
    options = [str(v) for v in (right, *wrong)]  # the unit is in the question
    return template.format(a=a, b=b), options, options[0], f"{a}{op}{b}={right}"


def _render(problem: tuple[Any, ...], rng: random.Random) -> tuple[str, dict[str, Any]]:
    build = {5: _comparison, 2: _conversion, 3: _relation}[len(problem)]
    question, options, answer, _ = build(problem)
    rng.shuffle(options)  # option order varies by seed; the split does not depend on it
    # the letter follows its option, so a model that has written the value it computed finds
    # the letter right after that value's occurrence in the prompt (one induction step)
    listing = " ".join(f"{opt} ({LETTERS[i]})" for i, opt in enumerate(options))
    letter = LETTERS[options.index(answer)]
    return f"{question}\n{listing}", {"answer": letter, "num_options": len(options)}


SPEC = DomainSpec("science", "science_mcq", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    return generate_rows(SPEC, n, seed, difficulty, split)


_OPTION = re.compile(r"(\S+) \(([A-D])\)")
_COMPARE = re.compile(r"(\w+) (\d+) \S+, (\w+) (\d+) \S+\. (\w+)\?")
_CONVERT = re.compile(r"(\d+) (\w+) in \w+\?")
_NUMBERS = re.compile(r"\d+")


def working(question: str) -> str:
    """The reasoning a demonstration writes: the comparison or the arithmetic on the numbers."""
    if match := _COMPARE.fullmatch(question):
        x, a, y, b, word = match.groups()
        return _comparison((word, x.lower(), y, int(a), int(b)))[3]
    if match := _CONVERT.fullmatch(question):
        return _conversion((match.group(2), int(match.group(1))))[3]
    for name, template, _, _ in RELATIONS:
        if question.endswith(template.rsplit(". ", 1)[1]):
            a, b = (int(n) for n in _NUMBERS.findall(question)[:2])
            return _relation((name, a, b))[3]
    return ""


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: the working in ``<think>`` ending in the chosen option as listed (value, then
    letter), then the letter."""
    letter = str(reference["answer"])
    question, _, listing = prompt.strip().rpartition("\n")
    chosen = {key: text for text, key in _OPTION.findall(listing)}.get(letter, "")
    pick = f"{chosen} ({letter})" if chosen else f"({letter})"
    steps = working(question)
    return think(f"{steps}, {pick}" if steps else pick, f"Answer: {letter}")
