"""scripts/embedded_study.py: finished arms are not rerun; the table averages seeds honestly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "embedded_study.py"


study = load_script("embedded_study")


def write_arm(root: Path, domain: str, seed: int, start: float, after: float) -> None:
    def metrics(avg: float) -> dict:
        m = {"avg_at_k": avg, "greedy_accuracy": avg, "pass_at_k": 0.9, "prompts": 64, "k": 8}
        return {domain: m}

    out = study.arm_dir(root, domain, seed)
    out.mkdir(parents=True)
    summary = {"heldout": {"start": metrics(start), "rl": metrics(after)}, "rl": {"seconds": 10.0}}
    (out / "summary.json").write_text(json.dumps(summary))


def test_table_reports_every_seed_and_the_mean(tmp_path: Path) -> None:
    write_arm(tmp_path, "math", 0, 0.20, 0.28)  # +8
    write_arm(tmp_path, "math", 1, 0.20, 0.24)  # +4
    write_arm(tmp_path, "code", 0, 0.50, 0.52)  # +2
    text = study.table(tmp_path, ["math", "code", "agent"], [0, 1])
    math_row = next(line for line in text.splitlines() if line.startswith("| math"))
    assert "+8.0, +4.0" in math_row and "**+6.0**" in math_row
    assert "| 20.0 (20.0) | 90.0 | 26.0 (26.0) |" in math_row
    assert "| code | 50.0 (50.0) | 90.0 | 52.0 (52.0) | +2.0 | +2.0 |" in text  # below target
    assert "| agent | – |" in text  # no run: shown, not invented
    assert "64 held-out prompts per domain, k=8" in text
    assert "1 of 3 domains rise by at least 5 points" in text


def test_finished_arms_are_not_rerun(tmp_path: Path) -> None:
    write_arm(tmp_path, "science", 0, 0.3, 0.4)
    assert study.run_arm(tmp_path, "science", 0, [], 1) == "science-seed0: done before"


def test_bad_arguments_name_the_fix() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--seeds", "0", "--bogus"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 2 and "pass Hydra overrides as key=value" in result.stderr


@pytest.mark.parametrize("domain", study.DOMAINS)
def test_every_arm_has_an_experiment(domain: str) -> None:
    assert (REPO / "conf" / "experiment" / f"tiny_rl_{domain}.yaml").is_file()
