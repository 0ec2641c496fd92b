"""A training stage's W&B run, read back from its offline logs: one run for the stage's life,
its per-domain metrics and time split on the global step, and a resume that appends to it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.tracking.readback import find_logs, read_run

REPO = Path(__file__).resolve().parents[1]
QUICK = [
    "experiment=smoke",
    "logger=wandb",
    "sft=none",
    "eval.in_run=false",
    "trainer.save_steps=2",
    "mixture.train_size=64",
    "algo.max_completion_length=16",
    "run_name=tracked",
]
pytestmark = pytest.mark.slow


def _train(out: Path, cache: Path, init: Path, *extra: str) -> None:
    env = dict(os.environ, RLVR_CACHE=str(cache), HF_HUB_OFFLINE="1", WANDB_MODE="offline")
    cmd = [sys.executable, "-m", "rlvr.train", *QUICK, f"init_from={init}", *extra]
    result = subprocess.run([*cmd, f"paths.output_root={out}"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_resumed_stage_appends_to_its_run_on_strictly_increasing_steps(tmp_path, rlvr_cache, sft_checkpoint):
    _train(tmp_path, rlvr_cache, sft_checkpoint, "trainer.max_steps=3")
    run_dir = tmp_path / "smoke" / "tracked"
    (first,) = find_logs(run_dir)
    logged = read_run(first)
    assert logged.steps() == [1, 2, 3]
    keys = logged.keys()
    expected = {
        "train/math/pass_rate",
        "train/math/zero_variance_group_frac",
        "train/completions/mean_length",
        "train/time/generation_s",
        "train/time/reward_s",
        "train/time/update_s",
    }
    assert expected <= keys, sorted(keys)
    assert logged.run["name"] == "tracked" and logged.run["job_type"] == "rl"
    assert set(logged.run["tags"]) >= {"math", "arm:math", "seed:0"}
    assert logged.config["rlvr"]["algo"]["max_completion_length"] == 16

    # killed after the checkpoint at step 2, before its final model: resumed, to step 4
    shutil.rmtree(run_dir / "final")
    shutil.rmtree(run_dir / "checkpoints" / "checkpoint-3", ignore_errors=True)
    _train(tmp_path, rlvr_cache, sft_checkpoint, "trainer.max_steps=4", "resume=true")
    segments = [read_run(p) for p in find_logs(run_dir)]
    assert len(segments) == 2 and segments[1].run["id"] == logged.run["id"]
    steps = [s for seg in segments for s in seg.steps()]
    assert steps == [1, 2, 3, 4]  # step 3, trained again after the resume, is not logged twice


def test_a_hydra_sweep_groups_its_points_and_logs_their_heldout_results(tmp_path, rlvr_cache, sft_checkpoint):
    env = dict(os.environ, RLVR_CACHE=str(rlvr_cache), HF_HUB_OFFLINE="1", WANDB_MODE="offline")
    quick = [q for q in QUICK if not q.startswith(("eval.in_run", "run_name"))]
    cmd = [sys.executable, "-m", "rlvr.train", "-m", *quick, f"init_from={sft_checkpoint}"]
    cmd += ["trainer.max_steps=1", "mixture.heldout_size=4", "eval.k=2", "trainer.seed=0,1"]
    result = subprocess.run([*cmd, f"paths.output_root={tmp_path}"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    points = sorted(p for p in (tmp_path / "smoke").iterdir() if (p / "summary.json").is_file())
    assert len(points) == 2, sorted(p.name for p in (tmp_path / "smoke").iterdir())
    runs = [[read_run(log) for log in find_logs(point)] for point in points]
    first_segments = [segments[0].run for segments in runs]
    assert len({r["group"] for r in first_segments}) == 1  # one sweep, one group
    # the folder names end in a digest (too long to read); the runs are named by the swept values
    assert sorted(r["name"] for r in first_segments) == ["trainer.seed=0", "trainer.seed=1"]
    assert len({r["id"] for r in first_segments}) == 2
    for segments in runs:
        assert len({seg.run["id"] for seg in segments}) == 1  # held-out results: the same run
        summary = {k: v for seg in segments for k, v in seg.summary.items()}
        for role in ("start", "rl"):
            assert 0.0 <= summary[f"eval/{role}/math/heldout/avg_at_k"] <= 1.0, sorted(summary)
