"""Exact-match verifier (``exact_match``): a short final answer equal to the gold after normalisation.

For benchmarks whose gold is a short string rather than a formula or a letter (HLE's
``exactMatch`` questions: names, terms, numbers, expressions).

Extraction is the math verifier's: the later of the last ``\\boxed{}`` and the last
``Answer:`` line; none is ``format_error``. Both sides are then normalised: Unicode NFKC,
``\\text{}``-style wrappers unwrapped, math delimiters, markdown emphasis, surrounding quotes
and a trailing full stop dropped, case folded, whitespace runs collapsed, no space around
commas. The answer matches when

1. its normalised text equals the gold's, or
2. an answer line narrowed to its answer does (``The answer is Mordred.`` -> ``Mordred``,
   ``The largest $n$ is $34$.`` -> ``34``), or
3. the gold is mathematical (a digit or a LaTeX command, no word outside math) and the math
   verifier finds the two equivalent (``0.5`` for ``\\frac{1}{2}``).

Left out, against HLE's official grading: HLE grades with an LLM judge that accepts
equivalent answers in other words. Here a synonym, a paraphrase, another spelling, a unit
written differently or an answer with extra qualifiers grades ``wrong``, so scores are a
lower bound of the judged ones.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verifiers._extract import answer_in_prose, final_span, strip_decorations
from verifiers.math_answer import MathVerifier, is_scorable
from verifiers.registry import register
from verifiers.verdict import Verdict, clip

MAX_ANSWER_CHARS = 1_000  # longer "answers" are not short answers; bounds the work
_WRAPPER = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_QUOTES = "\"'`“”‘’"
_SPACE = re.compile(r"\s+")
_COMMA = re.compile(r"\s*,\s*")
_MATHS = re.compile(r"[0-9\\^=+*/]")
_WORD_OUTSIDE_MATH = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\b")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_LEAD_IN = re.compile(r"^\W*(?:so\W+)?(?:the\s+)?(?:final\s+)?answer\s+(?:is|would be|should be)\W*", re.I)


def normalise(text: str) -> str:
    """The comparison form of an answer (see the module docstring)."""
    s = unicodedata.normalize("NFKC", text[:MAX_ANSWER_CHARS])
    for _ in range(3):  # wrappers nest a few levels at most
        s = _WRAPPER.sub(r"\1", s)
    s = strip_decorations(s).strip().strip(_QUOTES).strip()
    s = s.rstrip(".").strip()
    return _COMMA.sub(",", _SPACE.sub(" ", s.casefold()))


def is_mathematical(gold: str) -> bool:
    """A gold the math verifier should compare: digits or LaTeX, and no word outside math."""
    bare = _LATEX_COMMAND.sub(" ", gold)
    return bool(_MATHS.search(gold)) and not _WORD_OUTSIDE_MATH.search(bare)


@dataclass(frozen=True)
class ExactMatchVerifier:
    """Grades a short final answer against ``reference["answer"]`` (see module docstring)."""

    name: str = "exact_match"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        gold = reference.get("answer") if isinstance(reference, Mapping) else None
        if not isinstance(gold, str) or not normalise(gold):
            return Verdict.error(clip(f"unscorable reference: no gold answer in {reference!r}"))
        span = final_span(completion)
        if span is None or not span.text.strip():
            return Verdict.format_error("no \\boxed{} answer and no 'Answer:' line")
        shown = clip(span.text, 200)
        if len(span.text) > MAX_ANSWER_CHARS:
            return Verdict.wrong(shown, f"answer too long ({len(span.text)} chars)")
        want = normalise(gold)
        candidates = {normalise(span.text)}
        if span.kind != "boxed":
            candidates.add(normalise(answer_in_prose(span.text)))
            candidates.add(normalise(_LEAD_IN.sub("", span.text)))
        if want in candidates:
            return Verdict.correct(shown, "normalised text matches")
        if is_mathematical(gold) and is_scorable({"answer": gold}):
            verdict = MathVerifier().verify(completion, {"answer": gold})
            if verdict.is_correct:
                return Verdict.correct(shown, "mathematically equivalent")
        return Verdict.wrong(shown, clip(f"does not match gold {gold!r}"))


register("exact_match", ExactMatchVerifier)
