"""The ``exact_match`` verifier: a table of (completion, gold, status), bad references, and fuzz.

The fuzz reuses ``test_fuzz``'s hostile and random strings through the worker pool: every
item comes back as a Verdict in bounded time and never as ``error``.
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from test_fuzz import adversarial, random_strings, run_fuzz

import verifiers
from verifiers import Status, get_verifier
from verifiers.exact_match import is_mathematical, normalise
from verifiers.pool.pool import VerifierPool

FUZZED = ("exact_match",)

CASES = [
    ("Answer: Mordred", "Mordred", "correct"),
    ("Answer: **mordred**.", "Mordred", "correct"),
    ("Answer: The answer is Mordred.", "Mordred", "correct"),
    ("So the final answer is: \\boxed{\\text{Mordred}}", "Mordred", "correct"),
    ('Answer: "trans-2-butene"', "Trans-2-Butene", "correct"),
    ("Answer: 3 , 4", "3, 4", "correct"),
    ("Answer: Ｍｏｒｄｒｅｄ", "Mordred", "correct"),  # full-width letters, NFKC
    ("Answer: 0.75", "\\frac{3}{4}", "correct"),  # the math verifier's equivalence
    ("\\boxed{\\dfrac{6}{8}}", "3/4", "correct"),
    ("Answer: Arthur", "Mordred", "wrong"),
    ("Answer: The answer is not Mordred", "Mordred", "wrong"),
    ("Answer: Mordred and Arthur", "Mordred", "wrong"),
    ("Answer: ba", "ab", "wrong"),  # letters are words here, not commuting symbols
    ("Answer: 0.7", "\\frac{3}{4}", "wrong"),
    ("Answer: 3", "3 mol", "wrong"),  # a unit makes the gold prose: text must match
    ("Mordred, surely.", "Mordred", "format_error"),
    ("", "Mordred", "format_error"),
    ("Answer: " + "x" * 2_000, "Mordred", "wrong"),
]


@pytest.mark.parametrize(("completion", "gold", "status"), CASES)
def test_table(completion: str, gold: str, status: str) -> None:
    verdict = verifiers.verify(completion, {"answer": gold}, "exact_match")
    assert verdict.status.value == status, verdict
    assert verdict.score == (1.0 if status == "correct" else 0.0)


@pytest.mark.parametrize("reference", [{}, {"answer": None}, {"answer": "  "}, {"answer": 3}])
def test_bad_reference_is_an_error_verdict(reference: dict) -> None:
    verdict = verifiers.verify("Answer: 3", reference, "exact_match")
    assert verdict.status is Status.ERROR and "unscorable reference" in verdict.details


def test_normalise_and_mathematical_gold() -> None:
    assert normalise("  **\\text{The  Moon}**. ") == "the moon"
    assert is_mathematical("\\frac{1}{2}") and is_mathematical("2^{10}")
    assert not is_mathematical("Mordred") and not is_mathematical("3 mol")


def test_frozen_and_picklable() -> None:
    verifier = get_verifier("exact_match")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verifier.name = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(verifier)) == verifier


REFERENCES = {"exact_match": [{"answer": "Mordred"}, {"answer": "\\frac{1}{2}"}]}


def test_hostile_and_random_inputs_through_the_pool(monkeypatch) -> None:
    import test_fuzz

    monkeypatch.setattr(test_fuzz, "REFERENCES", REFERENCES)
    with VerifierPool(2, timeout_s=5.0) as pool:
        counts = run_fuzz(pool, adversarial() + random_strings(seed=3, count=300), 5.0)
    assert sum(n for k, n in counts.items() if k.endswith("timeout")) <= 5
