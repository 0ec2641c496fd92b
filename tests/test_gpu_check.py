"""scripts/gpu_check.sh: its syntax, and its tiny-model mode (``--cpu``) end to end: GRPO
with a checkpoint, a resume from it, a second run, a merge and an evaluation."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_check.sh"


def test_the_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_argument_is_refused_with_the_choices(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--gpus", "8"], capture_output=True, text=True)
    assert done.returncode == 2 and "--cpu, --out DIR" in done.stderr


@pytest.mark.slow
def test_cpu_mode_runs_end_to_end(tmp_path, rlvr_cache):
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    env["RLVR_CACHE"] = str(rlvr_cache)
    out = tmp_path / "check"
    done = subprocess.run(
        ["bash", str(SCRIPT), "--cpu", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    assert "gpu_check (cpu) passed" in log
    for run in ("a", "b"):
        line = re.search(rf"run {run}: 4 steps in .* (\d+) tokens/s; split: generation", log)
        assert line and int(line.group(1)) > 0, log[-3000:]
    assert re.search(r"resuming from .*checkpoint-2", (out / "a.log").read_text())
    assert (out / "merge" / "config.json").exists()
    assert len(re.findall(r"^eval (a|merge) +micro_(math|code) ", log, re.M)) == 4
