"""Special values and explosive expressions through the math verifier: graded, never ``error``.

A policy under RL pressure that learns to answer ``\\infty`` (or ``10!!!!``) must get a scored
verdict: an ``error`` counts toward ``trainer.max_infra_error_rate`` and could abort its own
run. Every answer below is tried against every gold, behind ``Answer:`` and in ``\\boxed{}``,
through the worker pool (hard time limit); then a table pins the verdicts that matter.
"""

from __future__ import annotations

import itertools

import pytest

from verifiers import Status, verify
from verifiers.pool.pool import VerifierPool

SPECIAL = [
    r"\infty",
    r"-\infty",
    r"+\infty",
    "oo",
    "-oo",
    "zoo",
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    r"\text{NaN}",
    r"\mathrm{nan}",
    r"\tilde{\infty}",
    r"\infty - \infty",
    r"0 \cdot \infty",
    r"\frac{\infty}{\infty}",
    r"\frac{0}{0}",
    r"\frac{1}{0}",
    "1/0",
    "0/0",
    r"\frac{1}{\infty}",
    r"\pm \infty",
    r"\infty\%",
    r"e^{\infty}",
    r"e^{-\infty}",
    r"1^\infty",
    r"\infty^0",
    r"\sqrt{-1}",
    r"\ln(0)",
    r"\log_1 2",
    r"\log_0 2",
    r"\tan(\pi/2)",
    r"\csc 0",
    r"\Gamma(0)",
    r"\Gamma(-1)",
    r"\zeta(1)",
    "(-1)!",
    r"(-\infty)!",
    r"\infty!",
    r"\emptyset",
    r"\varnothing",
    r"\{\}",
    r"\mathbb{R}",
    r"\mathbb{C}",
    r"\aleph_0",
    r"(-\infty, \infty)",
    r"[0, \infty)",
    r"(-\infty, 0] \cup [1, \infty)",
    r"\{1, \infty\}",
    r"\begin{pmatrix} \infty & 1 \\ 2 & \text{NaN} \end{pmatrix}",
    r"x > \infty",
    "1e309",
    "-1e309",
    "1e-400",
    r"10^{10^{10}}",
    r"9^{9^9}",
    r"(10^{100})!",
    "1000000!",
    "10!!!!!!!!!!",
    r"\sinh(10^{10})",
    r"\exp(\exp(\exp(10)))",
    r"e^{e^{e^{e}}}",
    r"\binom{10^{10}}{5}",
    r"\prod_{n=1}^{\infty} 2",
    r"\sum_{n=1}^{\infty} n",
    r"\int_0^\infty x dx",
    r"\lim_{x\to 0} 1/x",
    r"\frac{",
    r"\sqrt{",
    r"\left(",
    r"\begin{pmatrix}",
    "}{",
    "^^^",
    r"\infty_{9}",
    r"52_{\infty}",
    r"10_{0}",
    r"10_{1}",
    r"\text{undefined}",
    r"\text{DNE}",
]
GOLDS = [
    r"\infty",
    r"-\infty",
    r"\emptyset",
    r"(-\infty, 2)",
    "7",
    r"\frac{1}{2}",
    "0",
    r"\text{NaN}",
    r"\{1,2\}",
    "x^2",
    r"10^{100}",
    r"50\%",
]


def test_no_special_value_or_explosive_answer_is_an_error():
    items = [
        (f"{form}{answer}{close}", {"answer": gold})
        for answer, gold in itertools.product(SPECIAL, GOLDS)
        for form, close in (("Answer: ", ""), ("\\boxed{", "}"))
    ]
    with VerifierPool(2, timeout_s=20) as pool:
        verdicts = pool.verify_batch([(text, ref, "math") for text, ref in items])
    errors = [(text, ref, v) for (text, ref), v in zip(items, verdicts, strict=True) if v.status is Status.ERROR]
    assert errors == []
    timeouts = [text for (text, _), v in zip(items, verdicts, strict=True) if v.status is Status.TIMEOUT]
    assert timeouts == [], "decided up front, not by the pool's kill"


@pytest.mark.parametrize(
    ("answer", "gold", "status"),
    [
        (r"\infty", r"\infty", Status.CORRECT),
        ("+\\infty", r"\infty", Status.CORRECT),
        ("inf", r"\infty", Status.CORRECT),
        (r"-\infty", r"\infty", Status.WRONG),
        (r"\infty", "7", Status.WRONG),
        ("nan", "7", Status.WRONG),
        (r"\varnothing", r"\emptyset", Status.CORRECT),
        (r"(-\infty, 2)", r"(-\infty, 2)", Status.CORRECT),
        (r"(-\infty, 3)", r"(-\infty, 2)", Status.WRONG),
        ("10!!!!!!!!!!", "7", Status.WRONG),
        (r"\sinh(10^{10})", "7", Status.WRONG),
        (r"\prod_{n=1}^{\infty} 2", "7", Status.WRONG),
        ("(3!)!", "720", Status.CORRECT),  # a small nested factorial is still evaluated
        ("5!", "120", Status.CORRECT),
        (r"e^{0}", "1", Status.CORRECT),
        (r"\{ \}", r"\emptyset", Status.CORRECT),
        (r"\varnothing", r"\{1,2\}", Status.WRONG),
        # repeating decimals: math-verify alone reads 0.\overline{3} as 0
        (r"0.\overline{3}", r"\frac{1}{3}", Status.CORRECT),
        (r"0.\overline{3}", "0", Status.WRONG),
        (r"1.2\overline{45}", r"\frac{137}{110}", Status.CORRECT),
        (r"0.1\overline{6}", r"\frac{1}{5}", Status.WRONG),
    ],
)
def test_special_values_grade_as_a_grader_would(answer, gold, status):
    verdict = verify(f"Answer: {answer}", {"answer": gold}, "math")
    assert verdict.status is status, verdict
