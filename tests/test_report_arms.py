"""The arms beyond the paper in the report: every arm beside mixed and the best merge, seed by
seed, with its compute against the separate experts; the cascade's every stage on every domain;
the adaptive arm's weights over steps."""

from __future__ import annotations

import json

import pytest
from test_report_seeds import SCORES, UNSEEDED, write_model, write_run, write_study

from rlvr.report import build_report
from rlvr.reporting.tables import infer_role

# per seed {domain: avg_at_k}; the cascade trains math, then instruction, and loses some math
CASCADE_1 = {0: {"math": 0.57, "instruction": 0.25}, 1: {"math": 0.59, "instruction": 0.27}}
CASCADE = {0: {"math": 0.50, "instruction": 0.66}, 1: {"math": 0.54, "instruction": 0.64}}
ADAPTIVE = {0: {"math": 0.64, "instruction": 0.56}, 1: {"math": 0.66, "instruction": 0.72}}


def write_arms(root):
    for seed in (0, 1):
        run = write_run(root, f"cascade@1-math-seed{seed}", ["math"], 20.0 + seed)
        info = {"path": str(run / "final"), "run_dir": str(run), "domains": ["math"]}
        write_model(root, f"cascade@1-math-seed{seed}", CASCADE_1[seed], info)
        run = write_run(root, f"cascade-seed{seed}", ["instruction"], 25.0 + seed)
        info = {"path": str(run / "final"), "run_dir": str(run), "domains": ["instruction"]}
        write_model(root, f"cascade-seed{seed}", CASCADE[seed], info)
        run = write_run(root, f"adaptive-seed{seed}", ["math", "instruction"], 46.0 + seed)
        with (run / "metrics.jsonl").open("a") as fh:
            for step, w in ((1, 0.5), (2, 0.7)):
                fh.write(
                    json.dumps({"step": step, "math/mixture_weight": w, "instruction/mixture_weight": 1 - w}) + "\n"
                )
        info = {"path": str(run / "final"), "run_dir": str(run), "domains": ["math", "instruction"]}
        write_model(root, f"adaptive-seed{seed}", ADAPTIVE[seed], info)


@pytest.fixture
def report(tmp_path):
    study = write_study(tmp_path, SCORES, UNSEEDED)
    write_arms(study)
    return build_report(study)


def rows(report, name):
    (table,) = [t for t in report.tables if t.name == name]
    return {row[0]: row for row in table.rows}


def mean(values):
    return sum(values) / len(values)


def test_the_arms_are_named_by_their_labels():
    assert infer_role("cascade-seed0", {"domains": ["agent"]}, {}) == "cascade"
    assert infer_role("cascade@2-code-seed1", {"domains": ["code"]}, {}) == "cascade_stage"
    assert infer_role("adaptive-seed0", {"domains": ["math", "code"]}, {}) == "adaptive"


def test_every_arm_beside_mixed_and_the_best_merge_with_its_compute(report):
    arms = rows(report, "arms_table")
    assert set(arms) == {"mixed", "ties", "adaptive", "cascade"}  # ties: the best merge
    avg = lambda per: mean([mean(list(s.values())) for s in per.values()])  # noqa: E731
    assert arms["cascade"][3].mean == pytest.approx(100 * avg(CASCADE))
    # cascade - mixed, seed by seed
    diffs = [mean(list(CASCADE[s].values())) - mean(list(SCORES["mixed"][s].values())) for s in (0, 1)]
    assert arms["cascade"][4].mean == pytest.approx(100 * mean(diffs))
    assert arms["cascade"][4].n == 2
    assert arms["mixed"][4] is None and arms["ties"][5] is None
    experts = 30 + 31 + 50 + 51  # the separate experts' runs, both seeds
    assert arms["cascade"][6] == pytest.approx(20 + 21 + 25 + 26)  # every stage
    assert arms["cascade"][7] == pytest.approx((20 + 21 + 25 + 26) / experts)
    assert arms["ties"][6] == pytest.approx(experts + 3 + 3)  # the experts and the merges
    assert arms["adaptive"][7] == pytest.approx((46 + 47) / experts)


def test_the_cascade_table_shows_each_stage_on_every_domain(report):
    cascade = rows(report, "cascade_table")
    assert list(cascade) == ["sft", "cascade@1-math", "cascade"]
    assert cascade["cascade@1-math"][1] == "math" and cascade["cascade"][1] == "instruction"
    math_after = [cascade[k][2].mean for k in ("cascade@1-math", "cascade")]
    assert math_after == pytest.approx([100 * 0.58, 100 * 0.52])  # the later stage cost math
    # the intermediate model is not an arm: it stays out of the main table
    assert "cascade@1-math" not in rows(report, "main_table")
    assert "cascade" in rows(report, "main_table")


def test_the_adaptive_weights_are_drawn(report):
    assert any(p.name == "mixture_weights.png" for p in report.images)
    assert (report.folder / "mixture_weights.png").stat().st_size > 0
    assert "Arms: every way" in (report.folder / "report.md").read_text()


def test_a_study_without_extra_arms_has_no_arms_table(tmp_path):
    report = build_report(write_study(tmp_path, SCORES, UNSEEDED))
    assert not [t for t in report.tables if t.name in ("arms_table", "cascade_table")]
