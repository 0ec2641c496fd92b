"""Conformance: every gold answer of GSM8K, MATH-500 and AIME 24/25 grades correct as written.

Each gold is written the two ways a model would (``\\boxed{gold}`` and ``Answer: gold``) and
must grade correct; a perturbed gold (first non-zero digit changed, or ``+1`` appended)
must grade wrong. Exceptions live, explained, in tests/fixtures/math_gold_exceptions.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from verifiers.math_answer import MathVerifier

EXCEPTIONS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "math_gold_exceptions.json"
SOURCES = {
    "gsm8k": "gsm8k_test.jsonl",
    "math500": "math500_test.jsonl",
    "aime24": "aime24_test.jsonl",
    "aime25": "aime25_test.jsonl",
}


def gold_answers(math_dir: Path, read_jsonl: Callable) -> Iterator[tuple[str, str]]:
    for source, name in SOURCES.items():
        for i, row in enumerate(read_jsonl(math_dir / name)):
            answer = str(row["answer"])
            if source == "gsm8k":  # worked solution; the final answer follows "####"
                answer = answer.split("####")[-1].strip()
            yield f"{source}:{i}", answer


def perturb(gold: str) -> str:
    digit = re.search(r"[1-9]", gold) or re.search(r"\d", gold)
    if digit is None:
        return gold + "+1"
    new = str((int(digit.group()) + 1) % 10)
    return gold[: digit.start()] + new + gold[digit.end() :]


@pytest.fixture(scope="module")
def graded(shared_data: Path, read_jsonl: Callable) -> dict[str, tuple[str, list[str], bool]]:
    """key -> (gold, statuses of the two correct writings, perturbed graded correct)."""
    verifier = MathVerifier()
    out = {}
    for key, gold in gold_answers(shared_data / "math", read_jsonl):
        ref = {"answer": gold}
        writings = [f"Reasoning.\n\\boxed{{{gold}}}", f"Reasoning.\nAnswer: {gold}"]
        statuses = [verifier.verify(text, ref).status.value for text in writings]
        perturbed_ok = verifier.verify(f"\\boxed{{{perturb(gold)}}}", ref).is_correct
        out[key] = (gold, statuses, perturbed_ok)
    return out


def test_all_sources_present(graded: dict) -> None:
    counts = {s: sum(k.startswith(s + ":") for k in graded) for s in SOURCES}
    assert counts == {"gsm8k": 1319, "math500": 500, "aime24": 30, "aime25": 30}


def test_gold_grades_correct(graded: dict) -> None:
    listed = json.loads(EXCEPTIONS.read_text())["exceptions"]
    failing = {k: v for k, v in graded.items() if any(s != "correct" for s in v[1])}
    rate = 1 - len(failing) / len(graded)
    print(f"\ngold answers graded correct: {rate:.2%} of {len(graded)}")
    assert rate >= 0.995
    unexplained = sorted(set(failing) - set(listed))
    assert not unexplained, {k: failing[k] for k in unexplained}
    stale = sorted(set(listed) - set(failing))
    assert not stale, f"listed exceptions that now pass; remove them: {stale}"


def test_perturbed_gold_grades_wrong(graded: dict) -> None:
    still_correct = {k: (v[0], perturb(v[0])) for k, v in graded.items() if v[2]}
    assert not still_correct
