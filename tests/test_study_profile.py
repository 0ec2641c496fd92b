"""The study profile's arithmetic on a folder written by hand: start-up is the stage's wall
minus what its entry point measured, per-step parts count every step between logs, and
non-training stages add up per kind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.study.profile import format_profile, grouped, one_seed, profile

REPO = Path(__file__).resolve().parents[1]


def _entry(root: Path, kind: str, out: str, wall: float, cpu: float | None = None) -> dict:
    return {
        "kind": kind,
        "out_dir": str(root / out),
        "wall_s": wall,
        "cpu_s": cpu,
        "returncode": 0,
        "start": 0.0,
        "end": wall,
    }


def _folder(root: Path) -> Path:
    expert = root / "experts" / "math-seed0"
    expert.mkdir(parents=True)
    (expert / "summary.json").write_text(json.dumps({"total_seconds": 90.0}))
    steps = [  # logged at steps 1, 2 and 4: the last line stands for steps 3 and 4
        {"step": 1, "time/step_s": 20.0, "time/generation_s": 8.0, "time/reward_s": 2.0, "time/update_s": 10.0},
        {"step": 2, "time/step_s": 20.0, "time/generation_s": 8.0, "time/reward_s": 2.0, "time/update_s": 10.0},
        {"step": 4, "time/step_s": 15.0, "time/generation_s": 5.0, "time/reward_s": 1.0, "time/update_s": 9.0},
        {"step": 4, "train_runtime": 70.0},  # the trainer's closing line: no step timings
    ]
    (expert / "metrics.jsonl").write_text("\n".join(json.dumps(s) for s in steps) + "\nnot json\n")
    for seed in (0, 1):
        ev = root / "eval" / f"math-seed{seed}"
        ev.mkdir(parents=True)
        (ev / "micro_math.json").write_text(json.dumps({"seconds": 20.0}))
        (ev / "micro_code.json").write_text(json.dumps({"seconds": 10.0}))
        (ev / "model.json").write_text(json.dumps({}))
    merge = root / "merges" / "ties-seed0"
    merge.mkdir(parents=True)
    (merge / "merge.json").write_text(json.dumps({"seconds": 1.0}))
    stages = {
        "expert-math-seed0": _entry(root, "expert", "experts/math-seed0", 100.0, 95.0),
        "merge-ties-seed0": _entry(root, "merge", "merges/ties-seed0", 7.0, 6.0),
        "eval-math-seed0": _entry(root, "eval", "eval/math-seed0", 38.0, 36.0),
        "eval-math-seed1": _entry(root, "eval", "eval/math-seed1", 40.0, 37.0),
        "report": {**_entry(root, "report", "report", 5.0), "start": 200.0, "end": 205.0},
        "expert-code-seed0": {**_entry(root, "expert", "experts/code-seed0", 3.0), "returncode": 1},
    }
    (root / "study.json").write_text(json.dumps({"plan": {"jobs": 2}, "stages": stages}))
    return root


def test_parts_of_a_training_stage_an_evaluation_and_a_merge(tmp_path):
    profiled = {p.name: p for p in profile(_folder(tmp_path))}
    assert "expert-code-seed0" not in profiled  # failed: nothing to profile
    expert = profiled["expert-math-seed0"].parts
    assert expert["start-up"] == pytest.approx(10.0)
    assert expert["generation"] == pytest.approx(8 + 8 + 2 * 5)
    assert expert["grading"] == pytest.approx(2 + 2 + 2 * 1)
    assert expert["update"] == pytest.approx(10 + 10 + 2 * 9)
    assert expert["set-up & saves"] == pytest.approx(90 - 70)
    assert profiled["eval-math-seed0"].parts == {"start-up": 8.0, "sampling": 30.0}
    assert profiled["merge-ties-seed0"].parts == {"start-up": 6.0, "merge": 1.0}
    assert profiled["report"].parts == {} and profiled["report"].cpu_s is None


def test_one_seed_keeps_shared_stages_and_kinds_add_up(tmp_path):
    stages = profile(_folder(tmp_path))
    seed0 = one_seed(stages, 0)
    assert {p.name for p in seed0} == {
        "expert-math-seed0",
        "merge-ties-seed0",
        "eval-math-seed0",
        "report",
    }
    rows = {label: (n, p) for label, n, p in grouped(stages)}
    n, evals = rows["eval (x2)"]
    assert n == 2 and evals.wall_s == 78.0 and evals.cpu_s == 73.0
    assert evals.parts == {"start-up": 18.0, "sampling": 60.0}
    table = format_profile(stages)
    assert "| expert-math-seed0 | 100 | 95 | 10 | 20 | 26 | 6 | 38 | - | - |" in table
    assert table.splitlines()[-1].startswith("| **total** | 190 | - |")  # the report's CPU unknown


def test_the_script_prints_the_table_and_names_a_folder_that_is_not_a_study(tmp_path):
    folder = _folder(tmp_path / "study")
    out = subprocess.run(
        [sys.executable, "scripts/profile_study.py", str(folder)], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "| expert-math-seed0 |" in out and "eval-math-seed1" not in out
    assert "busy (some stage running, every seed): 105 s" in out  # not the gap before report
    # CPU of the finished stages that recorded it (95 + 6 + 36 + 37) against 2 jobs x 105 s
    assert "CPU (every stage, every seed): 174 s, 83% of study.jobs (2) x the busy time" in out
    bad = subprocess.run(
        [sys.executable, "scripts/profile_study.py", str(tmp_path)], cwd=REPO, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "is this a study folder?" in bad.stderr
