"""Verifiable constraints with sampled arguments, phrased in this module's own words.

Each family draws one IFEval/IFEvalG instruction (its id and keyword arguments, as the
``ifeval`` verifier reads them) and the sentence that asks for it. Families in one ``group``
contradict or undo each other (all capitals against all lowercase; a JSON object against a
closing phrase) and never meet in one prompt. Counts are drawn where a short answer can meet
them, so a 135M model's group of samples holds some that pass and some that fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Words a constraint asks for or forbids: common, and no topic's own word.
INCLUDE_WORDS = ("remarkable", "simple", "future", "careful", "together", "surprising", "always")
FORBID_WORDS = ("very", "really", "thing", "things", "important", "also", "many", "just")
END_PHRASES = ("That is all for now.", "Thanks for reading.", "Any other questions?")
FIRST_WORDS = ("Imagine", "Today", "Honestly", "Well", "Interestingly")
LAST_WORDS = ("indeed", "together", "tomorrow", "forever")
LETTERS = "aeilnorst"


@dataclass(frozen=True)
class Drawn:
    instruction_id: str
    kwargs: dict[str, Any]
    sentence: str


@dataclass(frozen=True)
class Family:
    name: str
    groups: frozenset[str]  # families sharing a group never meet in one prompt
    draw: Callable[[random.Random, str], Drawn]  # (rng, base prompt) -> one constraint
    max_words: Callable[[Drawn], int | None] = lambda _: None  # an upper length it sets


def _pick(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


def _lowercase(rng: random.Random, _: str) -> Drawn:
    said = _pick(
        rng,
        "Use only lowercase letters throughout; not one capital letter.",
        "Keep every letter of your reply in lowercase.",
    )
    return Drawn("change_case:english_lowercase", {}, said)


def _capitals(rng: random.Random, _: str) -> Drawn:
    said = _pick(rng, "Write the whole reply in CAPITAL LETTERS.", "Every letter must be uppercase.")
    return Drawn("change_case:english_capital", {}, said)


def _no_comma(rng: random.Random, _: str) -> Drawn:
    said = _pick(rng, "Do not use any commas.", "Your reply must contain no comma characters.")
    return Drawn("punctuation:no_comma", {}, said)


def _no_exclamation(rng: random.Random, _: str) -> Drawn:
    said = "Do not use exclamation marks anywhere in your reply."
    return Drawn("punctuation:punctuation_exclamation", {}, said)


def _min_words(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((60, 80, 100, 120, 150))
    said = _pick(rng, f"Write no fewer than {n} words.", f"Make your reply {n} words long or more.")
    return Drawn("length_constraints:number_words", {"num_words": n, "relation": "at least"}, said)


def _max_words(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((50, 70, 90, 120))
    said = _pick(rng, f"Keep it under {n} words.", f"Use fewer than {n} words in total.")
    return Drawn("length_constraints:number_words", {"num_words": n, "relation": "less than"}, said)


def _sentences(rng: random.Random, _: str) -> Drawn:
    relation = rng.choice(("at least", "less than"))
    n = rng.choice((3, 4, 5)) if relation == "at least" else rng.choice((6, 8, 10))
    said = (
        f"Write {n} sentences or more."
        if relation == "at least"
        else f"Your reply should have fewer than {n} sentences."
    )
    return Drawn("length_constraints:number_sentences", {"num_sentences": n, "relation": relation}, said)


def _paragraphs(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((2, 3, 4))
    said = f"Organize the reply as {n} paragraphs, with a line holding only *** between each pair."
    return Drawn("length_constraints:number_paragraphs", {"num_paragraphs": n}, said)


def _nth_first_word(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((2, 3))
    nth = rng.randint(1, n)
    word = rng.choice(FIRST_WORDS)
    said = f"Write {n} paragraphs separated by blank lines; paragraph number {nth} has to open with the word '{word}'."
    kwargs = {"num_paragraphs": n, "nth_paragraph": nth, "first_word": word.lower()}
    return Drawn("length_constraints:nth_paragraph_first_word", kwargs, said)


def _include(rng: random.Random, _: str) -> Drawn:
    words = rng.sample(INCLUDE_WORDS, rng.choice((1, 2)))
    said = f"Work the word{'s' if len(words) > 1 else ''} {' and '.join(words)} into your reply."
    return Drawn("keywords:existence", {"keywords": words}, said)


def _forbid(rng: random.Random, _: str) -> Drawn:
    words = rng.sample(FORBID_WORDS, rng.choice((1, 2, 3)))
    said = f"Never write these words: {', '.join(words)}."
    return Drawn("keywords:forbidden_words", {"forbidden_words": words}, said)


def _keyword_count(rng: random.Random, _: str) -> Drawn:
    word = rng.choice(INCLUDE_WORDS)
    n = rng.choice((2, 3))
    said = f"The word '{word}' has to show up {n} times or more."
    kwargs = {"keyword": word, "frequency": n, "relation": "at least"}
    return Drawn("keywords:frequency", kwargs, said)


def _letter_count(rng: random.Random, _: str) -> Drawn:
    letter = rng.choice(LETTERS)
    n = rng.choice((10, 15, 20))
    said = f"Use the letter '{letter}' at least {n} times."
    kwargs = {"letter": letter, "let_frequency": n, "let_relation": "at least"}
    return Drawn("keywords:letter_frequency", kwargs, said)


def _postscript(rng: random.Random, _: str) -> Drawn:
    marker = rng.choice(("P.S.", "P.P.S"))
    said = f"After the main text, add a note that begins with {marker}"
    return Drawn("detectable_content:postscript", {"postscript_marker": marker}, said)


def _end_phrase(rng: random.Random, _: str) -> Drawn:
    phrase = rng.choice(END_PHRASES)
    said = f"The very last words of your reply must be: {phrase}"
    return Drawn("startend:end_checker", {"end_phrase": phrase}, said)


def _title(rng: random.Random, _: str) -> Drawn:
    said = "Give the reply a title written between double angle brackets, like <<My Title>>."
    return Drawn("detectable_format:title", {}, said)


def _quotes(rng: random.Random, _: str) -> Drawn:
    said = "Put your entire reply inside one pair of double quotation marks."
    return Drawn("startend:quotation", {}, said)


def _bullets(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((2, 3, 4, 5))
    said = f"Present it as exactly {n} bullet points, each line starting with '* '."
    return Drawn("detectable_format:number_bullet_lists", {"num_bullets": n}, said)


def _highlights(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((1, 2, 3))
    parts = "part" if n == 1 else "parts"
    said = f"Mark at least {n} {parts} of the text with asterisks, as in *key idea*."
    return Drawn("detectable_format:number_highlighted_sections", {"num_highlights": n}, said)


def _placeholders(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((1, 2, 3))
    blanks = "blank" if n == 1 else "blanks"
    said = f"Leave {n} {blanks} for the reader to fill in, written in square brackets like [place]."
    return Drawn("detectable_content:number_placeholders", {"num_placeholders": n}, said)


def _sections(rng: random.Random, _: str) -> Drawn:
    n = rng.choice((2, 3))
    splitter = rng.choice(("Section", "Part"))
    said = f"Split the reply into {n} numbered parts, headed {splitter} 1, {splitter} 2 and so on."
    kwargs = {"section_spliter": splitter, "num_sections": n}
    return Drawn("detectable_format:multiple_sections", kwargs, said)


def _repeat(rng: random.Random, base: str) -> Drawn:
    said = f"Start by repeating the sentence '{base}' word for word, then give your answer."
    return Drawn("combination:repeat_prompt", {"prompt_to_repeat": base}, said)


def _first_word(rng: random.Random, _: str) -> Drawn:
    word = rng.choice(FIRST_WORDS)
    said = f"Begin your reply with the word '{word}'."
    return Drawn("first_word:first_word_answer", {"first_word": word}, said)


def _last_word(rng: random.Random, _: str) -> Drawn:
    word = rng.choice(LAST_WORDS)
    said = f"Make '{word}' the final word of your reply."
    return Drawn("last_word:last_word_answer", {"last_word": word}, said)


def _short(draw: Drawn) -> int | None:
    return int(draw.kwargs["num_words"]) if draw.kwargs.get("relation") == "less than" else None


_START, _END, _CASE, _SHAPE = "start", "end", "case", "shape"
FAMILIES: tuple[Family, ...] = (
    Family("lowercase", frozenset({_CASE}), _lowercase),
    Family("capitals", frozenset({_CASE}), _capitals),
    Family("no_comma", frozenset({"comma"}), _no_comma),
    Family("no_exclamation", frozenset(), _no_exclamation),
    Family("min_words", frozenset({"words"}), _min_words),
    Family("max_words", frozenset({"words"}), _max_words, _short),
    Family("sentences", frozenset({"sentences"}), _sentences),
    Family("paragraphs", frozenset({_SHAPE}), _paragraphs),
    Family("nth_first_word", frozenset({_SHAPE, _START}), _nth_first_word),
    Family("include", frozenset({"keywords"}), _include),
    Family("forbid", frozenset(), _forbid),
    Family("keyword_count", frozenset({"keywords"}), _keyword_count),
    Family("letter_count", frozenset(), _letter_count),
    Family("postscript", frozenset({_END}), _postscript),
    Family("end_phrase", frozenset({_END}), _end_phrase),
    Family("title", frozenset({_START}), _title),
    Family("quotes", frozenset({_START, _END}), _quotes),
    Family("bullets", frozenset({_SHAPE}), _bullets),
    Family("highlights", frozenset(), _highlights),
    Family("placeholders", frozenset(), _placeholders),
    Family("sections", frozenset({_SHAPE, _CASE}), _sections),
    Family("repeat", frozenset({_START}), _repeat),
    Family("first_word", frozenset({_START}), _first_word),
    Family("last_word", frozenset({_END}), _last_word),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


def draw_constraints(rng: random.Random, base: str, count: int) -> list[tuple[Family, Drawn]]:
    """``count`` constraints from families that share no group, in a random order."""
    chosen: list[Family] = []
    for family in rng.sample(FAMILIES, len(FAMILIES)):
        if len(chosen) == count:
            break
        if not any(family.groups & other.groups for other in chosen):
            chosen.append(family)
    return [(family, family.draw(rng, base)) for family in chosen]
