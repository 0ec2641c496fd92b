"""Conformance on MMLU-STEM, MMLU-Pro and SuperGPQA: gold letter in every accepted format.

For each question the gold letter written in each accepted format grades correct, every
other option letter grades wrong, and hedges between the gold and another letter grade wrong.
MMLU-STEM is sampled (every 4th question); the two 300-question samples are used whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from verifiers import Status
from verifiers.science import LETTERS, ScienceMCQVerifier

ACCEPTED = [
    "Reasoning...\nAnswer: {x}",
    "Reasoning...\n**Answer:** ({x})",
    "Reasoning...\nAnswer: {x}. {text}",
    "Reasoning...\n$\\boxed{{{x}}}$",
    "Reasoning...\nThe correct answer is ({x}).",
    "Reasoning...\n{x}",
]
HEDGES = [
    "Answer: {x} or {y}",
    "Answer: {y}, {x}",
    "Answer: {x}{y}",
    "\\boxed{{{x}, {y}}}",
    "Answer: both {x} and {y}",
]
_OPTION_LINE = re.compile(r"^([A-J])\.\s?(.*)$", re.MULTILINE)


def questions(root: Path, read_jsonl: Callable) -> Iterator[tuple[str, str, list[str]]]:
    """(id, gold letter, option texts) for the three science sets."""
    for i, row in enumerate(read_jsonl(root / "mmlu_stem_test.jsonl")):
        if i % 4 == 0:
            yield f"mmlu_stem:{i}", LETTERS[row["answer"]], list(row["choices"])
    for name in ("mmlu_pro_sample300_test.jsonl", "supergpqa_sample300_test.jsonl"):
        for i, row in enumerate(read_jsonl(root / name)):
            options = [text for _, text in _OPTION_LINE.findall(row["question"].split("Options are:")[-1])]
            yield f"{name.split('_sample')[0]}:{i}", row["answer"].split(".")[0].strip(), options


@pytest.fixture(scope="module")
def science_items(shared_data: Path, read_jsonl: Callable) -> list[tuple[str, str, list[str]]]:
    return list(questions(shared_data / "science", read_jsonl))


def test_items_loaded(science_items: list) -> None:
    assert len(science_items) > 1300
    for key, gold, options in science_items:
        assert 2 <= len(options) <= 10 and gold in LETTERS[: len(options)], key


def test_gold_letter_in_every_format_grades_correct(science_items: list) -> None:
    verifier = ScienceMCQVerifier()
    failures = []
    for key, gold, options in science_items:
        ref = {"answer": gold, "num_options": len(options)}
        text = options[LETTERS.index(gold)].split("\n")[0][:80]
        for template in ACCEPTED:
            completion = template.format(x=gold, text=text)
            if not verifier.verify(completion, ref).is_correct:
                failures.append((key, completion[-90:]))
    assert not failures, failures[:10]


def test_other_letters_and_hedges_grade_wrong(science_items: list) -> None:
    verifier = ScienceMCQVerifier()
    failures = []
    for key, gold, options in science_items:
        ref = {"answer": gold, "num_options": len(options)}
        for other in LETTERS[: len(options)].replace(gold, ""):
            for template in ACCEPTED[:2] + ACCEPTED[3:5]:
                verdict = verifier.verify(template.format(x=other, text=""), ref)
                if verdict.status is not Status.WRONG:
                    failures.append((key, other, verdict))
        other = LETTERS[(LETTERS.index(gold) + 1) % len(options)]
        for template in HEDGES:
            verdict = verifier.verify(template.format(x=gold, y=other), ref)
            if verdict.status is not Status.WRONG or "hedged" not in verdict.details:
                failures.append((key, template, verdict))
    assert not failures, failures[:10]
