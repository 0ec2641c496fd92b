"""Agreement with math-verify's own test cases whose prediction carries ``\\boxed{}`` or ``Answer:``.

The cases (prediction, gold, upstream verdict) are data ported into
tests/fixtures/math_verify_upstream_cases.json (origin noted there). Each runs through our
``math`` verifier; a case marked ``difference`` must get the opposite verdict, and its
reason must be documented under the same name in verifiers/math_answer.py's docstring.
The defect classes these cases exposed have fast reproducers in test_math_equivalence.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifiers import math_answer, verify

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "math_verify_upstream_cases.json"
DATA = json.loads(FIXTURE.read_text())
CASES = DATA["cases"]


@pytest.mark.slow  # ~20 s of sympy on two cores; the defect classes have fast tables elsewhere
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_upstream_case(case: dict) -> None:
    verdict = verify(case["prediction"], {"answer": case["answer"]}, "math")
    expected = case["upstream_equal"]
    if "difference" in case:
        expected = not expected  # a deliberate difference, asserted as such
    assert verdict.is_correct is expected, (verdict, case["answer"])


def test_every_difference_is_documented() -> None:
    doc = math_answer.__doc__ or ""
    names = {c["difference"] for c in CASES if "difference" in c}
    for name in names:
        assert f"[{name}]" in doc, name
        count = sum(c.get("difference") == name for c in CASES)
        assert f"({count} cases)" in doc, (name, count)


def test_port_is_substantial_and_both_ways() -> None:
    assert len({c["id"] for c in CASES}) == len(CASES) >= 100
    assert sum(not c["upstream_equal"] for c in CASES) >= 5
    differences = [c for c in CASES if "difference" in c]
    assert len(differences) <= 0.05 * len(CASES)
