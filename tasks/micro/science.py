"""Micro-suite science: multiple choice over a small built-in fact base, answered ``Answer: X``.

A canonical problem is a fact plus its set of distractors, so held-out rows ask facts seen in
training among option sets never seen there: they measure recall, not memorised letters.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Mapping
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, think

LETTERS = "ABCD"
LEVELS: tuple[int, ...] = (1, 2, 3)  # level L shows L+1 options

# Fact families: question -> answer, with distractors drawn from the family's answer pool.
FAMILIES: dict[str, dict[str, str]] = {
    "state": {
        "Ice is a?": "solid",
        "Steam is a?": "gas",
        "Water is a?": "liquid",
        "Air is a?": "gas",
        "Milk is a?": "liquid",
        "A rock is a?": "solid",
        "Lightning is a?": "plasma",
        "Wood is a?": "solid",
    },
    "unit": {
        "Unit of force?": "newton",
        "Unit of energy?": "joule",
        "Unit of power?": "watt",
        "Unit of charge?": "coulomb",
        "Unit of current?": "ampere",
        "Unit of voltage?": "volt",
        "Unit of mass?": "kilogram",
        "Unit of time?": "second",
        "Unit of length?": "metre",
        "Unit of pressure?": "pascal",
        "Unit of frequency?": "hertz",
        "Unit of resistance?": "ohm",
    },
    "element": {
        "Symbol of iron?": "Fe",
        "Symbol of gold?": "Au",
        "Symbol of silver?": "Ag",
        "Symbol of oxygen?": "O",
        "Symbol of hydrogen?": "H",
        "Symbol of carbon?": "C",
        "Symbol of sodium?": "Na",
        "Symbol of copper?": "Cu",
        "Symbol of lead?": "Pb",
        "Symbol of helium?": "He",
        "Symbol of nitrogen?": "N",
        "Symbol of zinc?": "Zn",
    },
    "planet": {
        "Largest planet?": "Jupiter",
        "The red planet?": "Mars",
        "Planet we live on?": "Earth",
        "Closest planet to Sun?": "Mercury",
        "Hottest planet?": "Venus",
        "Planet with big rings?": "Saturn",
        "Farthest planet?": "Neptune",
    },
    "number": {
        "Legs on a spider?": "8",
        "Legs on an insect?": "6",
        "Water boils at (C)?": "100",
        "Water freezes at (C)?": "0",
        "Hours in a day?": "24",
        "Planets in our system?": "8",
        "Months in a year?": "12",
    },
    "gas": {
        "Gas we breathe in?": "oxygen",
        "Gas in balloons?": "helium",
        "Main gas in air?": "nitrogen",
        "Lightest gas?": "hydrogen",
        "Gas plants take in?": "CO2",
    },
}


def _pool(family: str) -> list[str]:
    return sorted(set(FAMILIES[family].values()))


def _space(level: int) -> list[tuple[str, str, tuple[str, ...]]]:
    """Canonical problems: (question, answer, sorted distractors); order is irrelevant here."""
    if level not in LEVELS:
        raise ValueError(f"micro/science has no level {level}")
    problems = []
    for family, facts in FAMILIES.items():
        for question, answer in facts.items():
            others = [x for x in _pool(family) if x != answer]
            for combo in itertools.combinations(others, level):
                problems.append((question, answer, combo))
    return problems


def _render(problem: tuple[str, str, tuple[str, ...]], rng: random.Random):
    question, answer, distractors = problem
    options = [answer, *distractors]
    rng.shuffle(options)  # option order varies by seed; the split does not depend on it
    listing = " ".join(f"{LETTERS[i]}) {opt}" for i, opt in enumerate(options))
    letter = LETTERS[options.index(answer)]
    return f"{question}\n{listing}", {"answer": letter, "num_options": len(options)}


SPEC = DomainSpec("science", "science_mcq", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    return generate_rows(SPEC, n, seed, difficulty, split)


_OPTION = re.compile(r"([A-D])\) (.+?)(?= [A-D]\) |$)")


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: recall the fact in ``<think>``, then name its letter."""
    letter = str(reference["answer"])
    listing = prompt.strip().splitlines()[-1]
    options = dict(_OPTION.findall(listing))
    return think(options.get(letter, letter), f"Answer: {letter}")
