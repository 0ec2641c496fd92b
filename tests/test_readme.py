"""The README's first screen and tree of rooms stay true to the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_tree_of_rooms_is_current():
    result = subprocess.run(
        [sys.executable, "scripts/rooms.py", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_first_screen_gives_the_two_commands_and_ci_calls_the_test_one():
    first_screen = "\n".join((REPO / "README.md").read_text().splitlines()[:20])
    assert "make study" in first_screen and "make test" in first_screen
    assert "rlvr.study experiment=tiny_study" in first_screen  # the main job is the study
    assert "rlvr.study experiment=tiny_study" in (REPO / "Makefile").read_text()
    assert "make test" in (REPO / ".ci" / "run").read_text()
