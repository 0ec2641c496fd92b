"""Room for RL: the criterion, its table, and the calibration command on the tiny model."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.reporting.calibration import calibration_table, failing, verdict
from rlvr.reporting.tables import ModelResult

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("avg", "pass_k", "expected"),
    [
        (40.0, 70.0, "ok"),
        (15.0, 35.0, "ok"),  # both bounds are inside
        (70.0, 90.0, "ok"),
        (14.9, 60.0, "Avg@k below 15%"),
        (70.1, 95.0, "Avg@k above 70%"),
        (40.0, 59.9, "pass@k - Avg@k below 20 points"),
        (90.0, 92.0, "Avg@k above 70%; pass@k - Avg@k below 20 points"),
        (0.0, 0.0, "Avg@k below 15%; pass@k - Avg@k below 20 points"),
    ],
)
def test_verdict_says_why_a_set_leaves_no_room(avg, pass_k, expected):
    assert verdict(avg, pass_k) == expected


@pytest.mark.parametrize(
    ("avg", "chance", "expected"),
    [
        (46.5, 50.0, "Avg@k within 5 points of guessing (50.0%)"),
        (27.5, 25.0, "Avg@k within 5 points of guessing (25.0%)"),
        (38.4, 33.3, "ok"),  # more than 5 points above a three-way guess
        (40.0, None, "ok"),  # not multiple choice
    ],
)
def test_multiple_choice_at_chance_leaves_no_room(avg, chance, expected):
    assert verdict(avg, 95.0, chance) == expected


def test_guessing_accuracy_averages_over_the_rows_options():
    from rlvr.evaluation.metrics import guessing_accuracy
    from tasks import micro

    rows = [r for level in (1, 2, 3) for r in micro.generate("science", 20, 0, level, "heldout")]
    assert guessing_accuracy(rows) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert guessing_accuracy(micro.generate("math", 20, 0, 1, "heldout")) is None
    assert guessing_accuracy([]) is None


def _result(label: str, role: str, scores: dict[str, tuple[float, float]]) -> ModelResult:
    summaries = {
        bench: {"domain": bench.removeprefix("micro_"), "k": 8, "avg_at_k": a, "pass_at_k": p}
        for bench, (a, p) in scores.items()
    }
    return ModelResult(label, role, {}, summaries)


def test_table_covers_only_the_sft_model_and_flags_each_failing_set():
    results = [
        _result("sft", "sft", {"micro_math": (0.4, 0.8), "micro_code": (0.9, 0.95)}),
        _result("math", "expert", {"micro_math": (0.9, 0.95)}),
    ]
    table = calibration_table(results)
    assert [(r[0], r[2]) for r in table.rows] == [("sft", "micro_math"), ("sft", "micro_code")]
    math_row = table.rows[0]
    assert math_row[3] == 8 and math_row[4:7] == pytest.approx((40.0, 80.0, 40.0))
    assert [r[2] for r in failing(table)] == ["micro_code"]


def _calibrate(args: list[str], out: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RLVR_CACHE=str(cache), HF_HUB_OFFLINE="1", WANDB_MODE="disabled")
    cmd = [sys.executable, "-m", "rlvr.calibrate", *args, f"paths.output_root={out}"]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_missing_sft_model_names_the_stage_that_makes_it(tmp_path, rlvr_cache):
    result = _calibrate(["experiment=tiny_study"], tmp_path, rlvr_cache)
    said = result.stdout + result.stderr  # Hydra's job logging may go to either
    assert result.returncode == 2, said[-3000:]
    assert "no SFT model at" in said and "rlvr.study experiment=tiny_study" in said
    assert "Traceback" not in said


@pytest.mark.slow
def test_calibrate_evaluates_the_model_and_writes_the_table(tmp_path, rlvr_cache, tiny_model_dir):
    args = [
        "experiment=tiny_study",
        f'eval.models=["sft={tiny_model_dir}"]',
        "study.domains=[math,instruction]",
        "eval.k=2",
        "eval.max_prompts=3",
        "eval.max_new_tokens=8",
        "eval.greedy=false",
        "eval.workers=1",
    ]
    result = _calibrate(args, tmp_path, rlvr_cache)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    folder = tmp_path / "tiny_study" / "calibration"
    with (folder / "calibration.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["domain"] for r in rows} == {"math", "instruction"}
    for row in rows:  # every number is the evaluation's own summary, and the verdict follows it
        summary = json.loads((folder / "eval" / "sft" / f"{row['benchmark']}.json").read_text())
        assert float(row["Avg@k"]) == pytest.approx(100 * summary["avg_at_k"])
        assert row["room for RL"] == verdict(float(row["Avg@k"]), float(row["pass@k"]))
    assert "Room for RL" in result.stdout
    assert result.returncode == (1 if any(r["room for RL"] != "ok" for r in rows) else 0)
    assert not (tmp_path / "tiny_study" / "eval").exists()  # the study's own results untouched


def test_greedy_gap_stands_beside_the_verdict_and_is_blank_without_greedy():
    sft = _result("sft", "sft", {"micro_math": (0.25, 0.6), "micro_code": (0.5, 0.8)})
    sft.summaries["micro_math"]["greedy_accuracy"] = 0.55
    table = calibration_table([sft])
    cols = list(table.columns)
    greedy, gap = cols.index("greedy"), cols.index("greedy - Avg@k")
    math_row, code_row = table.rows
    assert (math_row[greedy], math_row[gap]) == pytest.approx((55.0, 30.0))
    assert (code_row[greedy], code_row[gap]) == (None, None)
    assert math_row[-1] == verdict(25.0, 60.0)  # the gap informs; the criterion is unchanged
