"""The routed-experts reference, each arm's recovery of the experts' gains, and forgetting flags,
checked by hand on a small study and on the paper's published table."""

from __future__ import annotations

import pytest

from rlvr.reporting.paper import paper_recovery, published_scores
from rlvr.reporting.recovery import forgetting_table, recovery_table
from rlvr.reporting.tables import ModelResult


def _model(label: str, role: str, math: float, code: float, domains: list[str] | None = None) -> ModelResult:
    summaries = {
        "micro_math": {"domain": "math", "avg_at_k": math},
        "micro_code": {"domain": "code", "avg_at_k": code},
    }
    return ModelResult(label, role, {"domains": domains} if domains else {}, summaries)


STUDY = [
    _model("sft", "sft", 0.50, 0.40),
    _model("math-seed0", "expert", 0.70, 0.40, ["math"]),
    _model("math-seed1", "expert", 0.60, 0.35, ["math"]),
    _model("code-seed0", "expert", 0.45, 0.60, ["code"]),
    _model("code-seed1", "expert", 0.50, 0.50, ["code"]),
    _model("mixed-seed0", "mixed", 0.60, 0.50, ["math", "code"]),
    _model("mixed-seed1", "mixed", 0.60, 0.30, ["math", "code"]),
    _model("ties-seed0", "merge", 0.55, 0.30),
    _model("ties-seed1", "merge", 0.55, 0.32),
]


def _row(table, label):
    return next(row for row in table.rows if row[0] == label)


def test_recovery_is_taken_seed_by_seed_against_the_routed_experts():
    table = recovery_table(STUDY, "avg_at_k")
    assert table.columns == ("model", "role", "math", "code", "macro")
    routed = _row(table, "routed experts")
    assert routed[2].mean == pytest.approx(65.0) and routed[3].mean == pytest.approx(55.0)  # each expert at home
    mixed = _row(table, "mixed")
    # math: (60-50)/(70-50) = 50% at seed 0, (60-50)/(60-50) = 100% at seed 1
    assert mixed[2].mean == pytest.approx(75.0) and mixed[2].n == 2
    # code: (50-40)/(60-40) = 50%, (30-40)/(50-40) = -100%
    assert mixed[3].mean == pytest.approx(-25.0)
    # macro per seed: 50 and 0
    assert mixed[4].mean == pytest.approx(25.0) and mixed[4].sd == pytest.approx(35.355, abs=1e-3)


def test_a_domain_whose_expert_did_not_gain_has_no_recovery():
    flat = [m if m.label != "code-seed1" else _model("code-seed1", "expert", 0.5, 0.405, ["code"]) for m in STUDY]
    mixed = _row(recovery_table(flat, "avg_at_k"), "mixed")
    assert mixed[3].n == 1  # seed 1's code expert gained 0.5 points: undefined there
    assert mixed[4].mean == pytest.approx((50.0 + 100.0) / 2)  # seed 0: mean(50, 50); seed 1: math only


def test_forgetting_flags_an_arm_below_sft_beyond_the_seed_spread():
    table = forgetting_table(STUDY, "avg_at_k")
    flagged = {(row[0], row[2]): row for row in table.rows}
    assert set(flagged) == {("ties", "code")}  # -10 and -8; mixed's code (+10, -10) is within
    assert flagged[("ties", "code")][3].mean == pytest.approx(-9.0)
    healthy = [m for m in STUDY if not m.label.startswith("ties")]
    assert forgetting_table(healthy, "avg_at_k").rows == ()


def test_the_papers_routed_row_and_recovery_come_from_its_published_table():
    table = paper_recovery()
    published = published_scores()
    routed = _row(table, "routed experts")
    math_routed = (published["math"]["aime24"] + published["math"]["aime25"]) / 2
    assert routed[2] == pytest.approx(math_routed, abs=0.01)
    mixed = _row(table, "mixed")
    start = (published["sft"]["aime24"] + published["sft"]["aime25"]) / 2
    mixed_math = (published["mixed"]["aime24"] + published["mixed"]["aime25"]) / 2
    assert mixed[2] == pytest.approx(100 * (mixed_math - start) / (math_routed - start), abs=0.05)
    assert {row[0] for row in table.rows} >= {"mixed", "ties", "mt_opd"}
