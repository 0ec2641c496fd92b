"""Math verifier (``math``): extract the final answer, compare it with the gold via math-verify.

Extraction, in order of preference (the one that appears last in the completion wins among
the first two):

1. the last ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces are followed). Boxes written
   one after another with only separators between them (commas, "and", "or", ``\\quad``,
   math delimiters) are one answer, the list ``a, b``: ``\\boxed{1}, \\boxed{2}`` equals gold
   ``1, 2`` and ``\\{1,2\\}`` (math-verify compares lists as sets) and is wrong for gold
   ``2``; other text between boxes ends the run (``\\boxed{3} no, \\boxed{4}`` is ``4``);
2. the last ``Answer:`` at the start of a line, or ``Final Answer:`` anywhere in a line
   (M2RL's prompt convention; ``**Final Answer:**`` and ``$...$`` are accepted). A body in
   prose is narrowed to its answer: first sentence, the text after its first "is"/"="
   outside math, then its last formula (or run of formulas) or its only number, so
   ``Final Answer: The largest $n$ is 34.`` gives ``34``;
3. only with ``fallback_last_number=True``: the last number in the text. Off by default
   because in training it rewards answers the prompt's format did not ask for; turn it on
   to evaluate base models that do not follow the format. A reference may override it with
   ``"fallback_last_number": bool``.

A number with a base subscript (``52_9``, ``52_{9}``, ``\\text{52}_{9}``) equals only the same
number in the same base: never ``52_8``, never bare ``52`` (math-verify drops the subscript).

Answers longer than ``MAX_ANSWER_CHARS``, nested deeper than ``MAX_BRACE_DEPTH`` or holding
a numeric power, factorial or fast-growing function too large to evaluate (``10^{10^{10}}``,
``10!!!!``, ``\\sinh(10^{10})``) or an unevaluated sum, product, integral or limit grade
``wrong`` up front; anything else slow is bounded by the pool's hard kill. No answer found is
``format_error``. Special values (``\\infty``, ``NaN``, ``\\emptyset``) are compared like any
other answer, and an answer that makes the comparison itself raise grades ``wrong``: model
output is never an ``error``. A gold that math-verify cannot parse is an ``error`` verdict
whose details start with ``unscorable reference`` (our data's fault, not the model's);
``is_scorable`` lets data loading drop such rows up front.

Against M2RL's grader (the last ``\\boxed{}`` after the last "Answer:"): ours takes whichever
of the two comes last, so an ``Answer: 12`` line without a box is graded rather than lost,
and a box that corrects an earlier answer line still counts. Both are what the prompt asks
for; neither lets an earlier, abandoned answer win.

Deliberate differences from math-verify's own test cases (asserted in
tests/verifiers/test_math_upstream.py, fixture tests/fixtures/math_verify_upstream_cases.json):

- [text-between-boxes] Boxes with other text between them are not joined; we grade the
  last box: ``\\boxed{(3,3)} \\text{ for part (a) and } \\boxed{(1,1)}``, ``y_1 =
  \\boxed{..} \\) and \\( y_2 = \\boxed{..}``, ``\\boxed{1} papers and \\boxed{2} bins``,
  ``\\boxed{35 cm} ++++++ \\boxed{4}`` (4 cases). math-verify joins these, but no text rule
  tells a label from a retraction (its own tests keep ``\\boxed{1} no no no \\boxed{2}``
  apart), and a retracted box must not count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verifiers import _mathverify
from verifiers._extract import answer_in_prose, final_span, max_brace_depth, strip_decorations
from verifiers._radix import radix_equal
from verifiers.registry import register
from verifiers.verdict import Verdict, clip

MAX_ANSWER_CHARS = 1_000  # longer "answers" are not answers; bounds parser cost
MAX_BRACE_DEPTH = 12  # real answers nest a few levels; deep nesting makes the parser crawl
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def extract_answer(text: str, fallback_last_number: bool = False) -> str | None:
    """The final answer written in ``text``, or None when there is none."""
    span = final_span(text)
    if span is not None and span.text:
        return strip_decorations(span.text) if span.kind == "boxed" else answer_in_prose(span.text)
    if fallback_last_number:
        numbers = _NUMBER.findall(text[-MAX_ANSWER_CHARS * 4 :])
        if numbers:
            return numbers[-1].rstrip(",")
    return None


def _gold_of(reference: Mapping[str, Any]) -> str | None:
    gold = reference.get("answer") if isinstance(reference, Mapping) else None
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)):
        return None
    gold = str(gold).strip()
    return gold or None


def _parse_gold(reference: Mapping[str, Any]) -> _mathverify.Parsed | None:
    gold = _gold_of(reference)
    if gold is None:
        return None
    parsed = _mathverify.parse_answer(gold)
    return parsed if parsed[0] else None


def is_scorable(reference: Mapping[str, Any]) -> bool:
    """Whether the reference's gold answer can be parsed, i.e. rows with it can be graded."""
    return _parse_gold(reference) is not None


def _answer_problem(answer: str) -> str | None:
    if len(answer) > MAX_ANSWER_CHARS:
        return f"answer too long ({len(answer)} chars > {MAX_ANSWER_CHARS})"
    if max_brace_depth(answer) > MAX_BRACE_DEPTH:
        return f"answer nests braces deeper than {MAX_BRACE_DEPTH}"
    return None


@dataclass(frozen=True)
class MathVerifier:
    """Grades a final math answer against ``reference["answer"]`` (see module docstring)."""

    fallback_last_number: bool = False
    name: str = "math"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        gold = _parse_gold(reference)
        if gold is None:
            return Verdict.error(clip(f"unscorable reference: cannot parse gold {reference.get('answer')!r}"))
        fallback = bool(reference.get("fallback_last_number", self.fallback_last_number))
        answer = extract_answer(completion, fallback_last_number=fallback)
        if answer is None:
            return Verdict.format_error("no \\boxed{} answer and no 'Answer:' line")
        shown = clip(answer, 200)
        problem = _answer_problem(answer)
        if problem is not None:
            return Verdict.wrong(shown, problem)
        same_base = radix_equal(_gold_of(reference) or "", answer)
        if same_base is not None:  # a base subscript: math-verify would drop it (52_9 == 52)
            if same_base:
                return Verdict.correct(shown)
            return Verdict.wrong(shown, clip(f"base or digits differ from {reference.get('answer')!r}"))
        try:
            return _compare(gold, answer, shown, reference.get("answer"))
        except Exception as exc:  # noqa: BLE001  (the gold parsed: the model's answer broke it)
            return Verdict.wrong(shown, clip(f"answer cannot be compared ({type(exc).__name__})"))


def _compare(gold: _mathverify.Parsed, answer: str, shown: str, written: Any) -> Verdict:
    parsed = _mathverify.parse_answer(answer)
    if _mathverify.oversized(parsed) and not _mathverify.oversized(gold):
        return Verdict.wrong(shown, "answer holds a power too large to compare")
    if _mathverify.equivalent(gold, parsed):
        return Verdict.correct(shown)
    return Verdict.wrong(shown, clip(f"not equivalent to gold {written!r}"))


register("math", MathVerifier)
