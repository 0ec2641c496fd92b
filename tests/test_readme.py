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


def _table(text: str, header_start: str) -> dict[str, list[str]]:
    """Rows of the first markdown table whose header starts with ``header_start``: model ->
    its numeric cells (mean ± sd strings), columns named by the header."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        rows[cells["model"]] = cells
    return rows


def test_readme_study_table_is_the_reports():
    """The README's study table and docs/tiny_study_report.md come from one study folder:
    every model and every domain's Avg@8 and the average agree to the printed digit."""
    readme = _table((REPO / "README.md").read_text(), "| model | role | math |")
    report = _table(
        (REPO / "docs" / "tiny_study_report.md").read_text(), "| model | role | seeds | math/"
    )
    assert readme.keys() == report.keys() and len(readme) >= 10
    for model, cells in readme.items():
        theirs = report[model]
        for domain in ("math", "code", "science", "instruction", "agent"):
            (key,) = [k for k in theirs if k.startswith(f"{domain}/")]
            assert cells[domain] == theirs[key], (model, domain)
        assert cells["avg"] == theirs["avg"], model
