"""Micro-suite instruction following: short IFEval-type constraints on a given phrase.

A canonical problem is a phrase with its constraints; held-out rows pair known constraints
with phrases they never met in training. References use IFEval's ids and kwarg names.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.micro._common import DomainSpec, generate_rows, think

LEVELS: tuple[int, ...] = (1, 2, 3)

# "the <noun> is <adj>": each passes langdetect as English in every case/quote/title variant,
# which IFEval's change_case checkers require.
PHRASES: tuple[str, ...] = (
    "the sun is hot",
    "the sky is blue",
    "the moon is bright",
    "the water is cold",
    "the car is fast",
    "the baby is asleep",
    "the sea is long",
    "the milk is fresh",
    "the sea is small",
    "the road is long",
    "the sun is bright",
    "the night is dark",
    "the room is clean",
    "the river is fast",
    "the sea is warm",
    "the bread is soft",
    "the city is dark",
    "the car is hot",
    "the shirt is blue",
    "the milk is hot",
    "the room is new",
    "the city is warm",
    "the water is blue",
    "the night is cold",
    "the road is dark",
    "the sea is nice",
    "the book is clean",
    "the room is dark",
    "the moon is small",
    "the cat is small",
    "the bread is fresh",
    "the car is cold",
    "the book is fresh",
    "the sky is warm",
    "the river is blue",
    "the cat is soft",
)
NOUNS: tuple[str, ...] = ("sun", "sea", "sky", "cat", "dog", "car", "box", "tea", "map", "pen")
END_WORDS: tuple[str, ...] = ("ok", "now", "yes")
KEYWORDS: tuple[str, ...] = ("red", "big", "old")


@dataclass(frozen=True)
class Constraint:
    """One IFEval instruction: its id and kwargs, how the prompt says it, how output obeys it."""

    instruction_id: str
    kwargs: tuple[tuple[str, Any], ...]
    says: str  # the sentence in the prompt
    note: str  # the reasoning keyword in the demonstration
    stage: int  # application order: content edits, then title, then case, then quotes
    apply: Callable[[str], str]


def _case(upper: bool) -> Constraint:
    if upper:
        return Constraint("change_case:english_capital", (), "Use capitals.", "caps", 2, str.upper)
    return Constraint("change_case:english_lowercase", (), "Use lowercase.", "lower", 2, str.lower)


QUOTES = Constraint("startend:quotation", (), "Wrap in quotes.", "quotes", 3, lambda s: f'"{s}"')
TITLE = Constraint(
    "detectable_format:title",
    (),
    "Add a <<title>>.",
    "title",
    1,
    lambda s: f"<<{s.split()[1].capitalize()}>>\n{s}",
)
NO_COMMA = Constraint("punctuation:no_comma", (), "No commas.", "no commas", 0, lambda s: s.replace(",", ""))
FEWER = Constraint(
    "length_constraints:number_words",
    (("num_words", 4), ("relation", "less than")),
    "Under 4 words.",
    "under 4",
    0,
    lambda s: s.split(" ", 1)[1].capitalize(),  # drop the article
)
MORE = Constraint(
    "length_constraints:number_words",
    (("num_words", 6), ("relation", "at least")),
    "At least 6 words.",
    "6 words",
    0,
    lambda s: f"{s} all day",
)


def _end(word: str) -> Constraint:
    return Constraint(
        "startend:end_checker",
        (("end_phrase", word),),
        f"End with {word}.",
        f"end {word}",
        0,
        lambda s: f"{s} {word}",
    )


def _keyword(word: str) -> Constraint:
    return Constraint(
        "keywords:existence",
        (("keywords", (word,)),),
        f"Use the word {word}.",
        f"word {word}",
        0,
        lambda s: f"{s} and {word}",
    )


CASES = (_case(True), _case(False))
ENDS = tuple(_end(w) for w in END_WORDS)
WORDS = tuple(_keyword(w) for w in KEYWORDS)


_ALL = (*CASES, QUOTES, TITLE, NO_COMMA, FEWER, MORE, *ENDS, *WORDS)
_BY_NOTE: dict[str, Constraint] = {c.note: c for c in _ALL}
_BY_SAYS: dict[str, Constraint] = {c.says: c for c in _ALL}


def _space(level: int) -> list[tuple[str, ...]]:
    """Canonical problems: (phrase, constraint notes...), plain strings so they hash stably."""
    if level == 1:
        return [(p, c.note) for p in PHRASES for c in (*CASES, QUOTES)]
    if level == 2:
        singles: list[tuple[str, ...]] = [(p, c.note) for p in PHRASES for c in (*ENDS, *WORDS, TITLE, FEWER, MORE)]
        lists = [(", ".join(t), NO_COMMA.note) for t in itertools.permutations(NOUNS, 3)]
        return singles + lists
    if level == 3:
        second = (QUOTES, TITLE, *ENDS, *WORDS)
        return [(p, case.note, c.note) for p in PHRASES for case in CASES for c in second]
    raise ValueError(f"micro/instruction has no level {level}")


def _reference(constraints: list[Constraint], prompt: str) -> dict[str, Any]:
    kwargs = [{k: list(v) if isinstance(v, tuple) else v for k, v in c.kwargs} for c in constraints]
    ids = [c.instruction_id for c in constraints]
    return {"instruction_id_list": ids, "kwargs": kwargs, "prompt": prompt}


def _render(problem: tuple[str, ...], rng: random.Random) -> tuple[str, dict[str, Any]]:
    phrase, *notes = problem
    constraints = [_BY_NOTE[n] for n in notes]
    shown = phrase if constraints[0] is NO_COMMA else phrase.capitalize()
    prompt = " ".join(c.says for c in constraints) + f" Write: {shown}"
    return prompt, _reference(constraints, prompt)


SPEC = DomainSpec("instruction", "ifeval", LEVELS, _space, _render)


def generate(n: int, seed: int, difficulty: Any = None, split: str = "train") -> list[dict]:
    return generate_rows(SPEC, n, seed, difficulty, split)


_SENTENCE = re.compile(r"[^.]*?\.(?: |$)")


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: the constraint keywords in ``<think>``, then the phrase made to obey them."""
    head, _, phrase = prompt.partition("Write: ")
    said = [s.strip() for s in _SENTENCE.findall(head)]
    constraints = [_BY_SAYS[s] for s in said if s in _BY_SAYS]
    text = phrase.strip()
    for c in sorted(constraints, key=lambda c: c.stage):
        text = c.apply(text)
    return think(", ".join(c.note for c in constraints), text)
