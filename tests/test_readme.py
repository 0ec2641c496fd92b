"""The README's first screen and tree of rooms stay true to the code; the README stays a
front door and every page it links to under docs/ is there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOMS_BEGIN, ROOMS_END = "<!-- rooms:begin -->", "<!-- rooms:end -->"
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s[^)]*)?\)")


def _pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_tree_of_rooms_is_current():
    result = subprocess.run([sys.executable, "scripts/rooms.py", "--check"], cwd=REPO, capture_output=True, text=True)
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
    report = _table((REPO / "docs" / "tiny_study_report.md").read_text(), "| model | role | seeds | math/")
    assert readme.keys() == report.keys() and len(readme) >= 10
    for model, cells in readme.items():
        theirs = report[model]
        for domain in ("math", "code", "science", "instruction", "agent"):
            (key,) = [k for k in theirs if k.startswith(f"{domain}/")]
            assert cells[domain] == theirs[key], (model, domain)
        assert cells["avg"] == theirs["avg"], model


def test_every_relative_link_points_to_a_file():
    broken = []
    for page in _pages():
        for target in _LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken


def test_readme_is_a_front_door():
    """Without the generated tree of rooms the README is a page, not the manual: the rest
    lives under docs/."""
    lines = (REPO / "README.md").read_text().splitlines()
    begin, end = lines.index(ROOMS_BEGIN), lines.index(ROOMS_END)
    outside = len(lines) - (end - begin - 1)
    assert outside <= 120, f"README.md is {outside} lines outside the tree of rooms"
    # run history (which commit gave which table) lives in docs/study.md and the commits
    front = "\n".join(lines[:begin] + lines[end:])
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", front) if re.search(r"[a-f]", w) and re.search(r"\d", w)]
    assert not hashes, f"commit hashes on the README's front door: {hashes}"


def test_every_docs_page_opens_with_its_command():
    """Each page under docs/ (the study's generated report aside) shows, within its first six
    lines, a fenced code block holding the command it documents."""
    pages = [p for p in sorted((REPO / "docs").glob("*.md")) if p.name != "tiny_study_report.md"]
    assert pages
    without = []
    for page in pages:
        head = page.read_text().splitlines()[:6]
        opening = next((i for i, line in enumerate(head) if line.startswith("```")), None)
        body = []
        for line in head[opening + 1 :] if opening is not None else []:
            if line.startswith("```"):
                break
            body.append(line.strip())
        if not any(line and not line.startswith("#") for line in body):
            without.append(page.name)
    assert not without, without


def test_configuration_reference_is_current():
    done = subprocess.run(
        [sys.executable, "scripts/config_docs.py", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
