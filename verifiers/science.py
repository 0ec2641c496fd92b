"""Science verifiers: ``science_mcq`` (one letter of A..J) and ``science_numeric`` (tolerance, units).

Multiple choice, where the answer is looked for (first rule that finds a letter wins):

1. the last ``Answer: X`` line (the prompt convention; ``**Answer:** (X)``, ``Answer: X. text``);
2. the last ``\\boxed{X}`` (``\\boxed{\\text{X}}`` too);
3. the last phrase "the (correct) answer/option/choice is (X)";
4. the last non-empty line when it is a lone letter (``C``, ``(C)``, ``**C.**``).

Several letters in the chosen span ("A or C", "A, C", "AC", "both A and C") are a hedge and
grade ``wrong``. Lower-case letters count only when unambiguous (``(c)``, ``c.``, a bare ``c``).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers._extract import final_span, last_answer_line, last_boxed, strip_decorations
from verifiers._quantity import last_number_text, parse_quantity, prefix_factor
from verifiers.registry import register
from verifiers.verdict import Verdict, clip

LETTERS = "ABCDEFGHIJ"
_UNWRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|boxed|fbox)\s*\{([^{}]*)\}")
# A leading option letter; "I think..." is the pronoun, and lower case needs "(c)"/"c."/"c".
_LEAD = re.compile(
    r"^(?:(?:option|choice)\s*)?[(\[]?(?:(?!I\s+(?!or\b|and\b)[a-z])(?P<up>[A-J])|(?P<low>[a-j])(?=[.)\]:]|$))"
    r"[)\]]?(?=$|[\s.,:;)\]}*/&+])"
)
_MORE = re.compile(
    r"^[\s.)\]]*(?:,|/|&|\+|\band/or\b|\bor\b|\band\b)\s*(?:(?:option|choice)\s*)?[(\[]?([A-J])[)\]]?(?![A-Za-z])",
    re.IGNORECASE,
)
_RUN = re.compile(r"^([A-J]{2,4})(?![A-Za-z])")
_MARKED = re.compile(r"(?:\b(?:option|choice)\s+\(?|\()([A-J])(?![A-Za-z])")
_HEDGE_WORD = re.compile(r"^(?:both|either|all of|any of|neither)\b", re.IGNORECASE)
_BARE = re.compile(r"(?<![A-Za-z])\(?([A-J])\)?(?![A-Za-z])")
_PHRASE = re.compile(
    r"(?:answer|option|choice)\s+(?:is|would be|should be)\s*[:：]?\s*(?P<body>[^\n]{0,60})",
    re.IGNORECASE,
)


def _unwrap(span: str) -> str:
    s = strip_decorations(span)
    for _ in range(3):
        s = _UNWRAP.sub(r"\1", s)
    return s.strip().lstrip("*_").strip()


def letters_in(span: str) -> list[str]:
    """The answer letters a span names, in order, without repeats (more than one = hedge)."""
    s = _unwrap(span)[:200]
    run = _RUN.match(s)
    if run:
        return list(dict.fromkeys(run.group(1)))
    lead = _LEAD.match(s)
    if lead is None:  # "both A and C", "either (A) or (B)": hedges, or marked letters
        pattern = _BARE if _HEDGE_WORD.match(s) else _MARKED
        return list(dict.fromkeys(m.upper() for m in pattern.findall(s)))
    found = [(lead.group("up") or lead.group("low")).upper()]
    rest = s[lead.end() :]
    while (more := _MORE.match(rest)) is not None:
        found.append(more.group(1).upper())
        rest = rest[more.end() :]
    return list(dict.fromkeys(found))


def _from_answer_line(text: str) -> list[str]:
    span = last_answer_line(text)
    return letters_in(span.text) if span else []


def _from_boxed(text: str) -> list[str]:
    span = last_boxed(text)
    return letters_in(span.text) if span else []


def _from_phrase(text: str) -> list[str]:
    bodies = [m.group("body") for m in _PHRASE.finditer(text[-20_000:])]
    return letters_in(bodies[-1]) if bodies else []


def _from_last_line(text: str) -> list[str]:
    lines = [line for line in text[-2_000:].splitlines() if line.strip()]
    if not lines:
        return []
    last = _unwrap(lines[-1])
    return [last.strip("()[].").upper()] if re.fullmatch(r"[(\[]?[A-Ja-j][)\].]?", last) else []


_RULES: tuple[tuple[str, Callable[[str], list[str]]], ...] = (
    ("answer_line", _from_answer_line),
    ("boxed", _from_boxed),
    ("phrase", _from_phrase),
    ("last_line", _from_last_line),
)


def extract_choice(text: str) -> tuple[list[str], str]:
    """Letters named by the first rule that finds any, and the rule's name."""
    for rule, finder in _RULES:
        found = finder(text)
        if found:
            return found, rule
    return [], ""


def _mcq_gold(reference: Mapping[str, Any]) -> tuple[str, int] | None:
    gold = str(reference.get("answer", "")).strip().upper()[:1]
    try:
        n = int(reference.get("num_options", len(LETTERS)))
    except (TypeError, ValueError):
        return None
    if not 2 <= n <= len(LETTERS) or not gold or gold not in LETTERS[:n]:
        return None
    return gold, n


@dataclass(frozen=True)
class ScienceMCQVerifier:
    """Grades one option letter against ``reference["answer"]`` (see module docstring)."""

    name: str = "science_mcq"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        gold = _mcq_gold(reference)
        if gold is None:
            return Verdict.error(clip(f"unscorable reference: bad MCQ reference {dict(reference)!r}"))
        letter, n = gold
        found, rule = extract_choice(completion)
        if not found:
            return Verdict.format_error("no answer letter found")
        if len(found) > 1:
            return Verdict.wrong(",".join(found), f"hedged between {', '.join(found)} ({rule})")
        if found[0] not in LETTERS[:n]:
            return Verdict.wrong(found[0], f"letter {found[0]} is not one of the {n} options")
        if found[0] == letter:
            return Verdict.correct(found[0], rule)
        return Verdict.wrong(found[0], f"expected {letter} ({rule})")


def shuffle_options(question_options: Sequence[str], gold_index: int, seed: int) -> tuple[list[str], str]:
    """Shuffle options deterministically by ``seed``; return them and the gold's new letter."""
    n = len(question_options)
    if not 2 <= n <= len(LETTERS):
        raise ValueError(f"need 2..{len(LETTERS)} options, got {n}")
    if not 0 <= gold_index < n:
        raise ValueError(f"gold_index {gold_index} out of range for {n} options")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [question_options[i] for i in order], LETTERS[order.index(gold_index)]


@dataclass(frozen=True)
class ScienceNumericVerifier:
    """Grades a number (with optional unit) within a relative tolerance of the gold.

    Per-row ``rel_tol`` and ``unit`` in the reference override the defaults. An answer in
    another SI prefix of the reference unit is converted (``981 cm/s^2`` for ``9.81 m/s^2``);
    any other unit is ``wrong``. A bare number is accepted unless ``require_unit``.
    """

    rel_tol: float = 0.01
    abs_tol: float = 1e-12
    require_unit: bool = False
    fallback_last_number: bool = False
    name: str = "science_numeric"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        gold = parse_quantity(str(reference.get("answer", "")))
        if gold is None:
            return Verdict.error(clip(f"unscorable reference: no number in {reference.get('answer')!r}"))
        unit_of = parse_quantity("0 " + str(reference.get("unit") or ""))
        if unit_of is None:  # a reference unit too long to read, or with an overflowing exponent
            return Verdict.error(clip(f"unscorable reference: unit {reference.get('unit')!r} does not parse"))
        unit = unit_of.unit or gold.unit
        span = final_span(completion)
        text = span.text if span else ""
        if not text and self.fallback_last_number:
            text = last_number_text(completion)
        answer = parse_quantity(text)
        if answer is None:
            return Verdict.format_error("no numeric answer found")
        shown = clip(text, 200)
        value = answer.value
        if answer.unit and unit:
            factor = prefix_factor(answer.unit, unit)
            if factor is None:
                return Verdict.wrong(shown, f"unit {answer.unit!r} does not match {unit!r}")
            value *= factor
        elif unit and self.require_unit:
            return Verdict.wrong(shown, f"missing unit {unit!r}")
        rel_tol = float(reference.get("rel_tol", self.rel_tol))
        if math.isclose(value, gold.value, rel_tol=rel_tol, abs_tol=self.abs_tol):
            return Verdict.correct(shown)
        return Verdict.wrong(shown, f"{value:g} is not within {rel_tol:g} of {gold.value:g}")


register("science_mcq", ScienceMCQVerifier)
register("science_numeric", ScienceNumericVerifier)
