"""The distribution's layout: our import packages, their dependency rules, the entry points."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = {"torch", "trl", "transformers", "hydra", "wandb", "accelerate", "peft", "rlvr"}


def test_verifiers_and_tasks_are_ours():
    import tasks
    import verifiers

    # PyPI has an unrelated `verifiers`; ours must shadow it.
    assert Path(verifiers.__file__).resolve().parent == REPO / "verifiers"
    assert Path(tasks.__file__).resolve().parent == REPO / "tasks"


@pytest.mark.parametrize("package", ["verifiers", "tasks"])
def test_no_heavy_imports(package):
    offenders = []
    for path in (REPO / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_importing_verifiers_and_tasks_loads_no_torch():
    code = "import sys, verifiers, tasks, tasks.registry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# The verbs a user runs (``python -m rlvr.<verb>``): recipes that call building blocks.
VERBS = {
    "train",
    "sft",
    "distill",
    "merge",
    "evaluate",
    "analyze",
    "report",
    "filter",
    "calibrate",
    "data_report",
}


def _imported_modules(path: Path) -> list[str]:
    """Every absolute module an ``import`` names, at module level or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return found


def test_no_building_block_imports_a_verb():
    """Recipes call building blocks, never the reverse: a module under rlvr/ that is not a verb
    (nor the study's entry) imports no verb, so a recipe is never used as a library."""
    verbs = {f"rlvr.{v}" for v in VERBS} | {"rlvr.study.__main__"}
    offenders = []
    for path in sorted((REPO / "rlvr").rglob("*.py")):
        rel = path.relative_to(REPO / "rlvr")
        if rel.with_suffix("").as_posix() in VERBS or rel.as_posix() == "study/__main__.py":
            continue
        offenders += [f"{rel}: {name}" for name in _imported_modules(path) if name in verbs]
    assert offenders == [], "building blocks importing an entry point:\n" + "\n".join(offenders)


def test_every_verb_is_a_runnable_module():
    for verb in VERBS:
        text = (REPO / "rlvr" / f"{verb}.py").read_text()
        assert 'if __name__ == "__main__":' in text, verb


def test_rlvr_top_level_holds_only_the_verbs_and_rooms():
    """A newcomer opening rlvr/ sees what a user runs; every building block lives in a room."""
    modules = {p.stem for p in (REPO / "rlvr").glob("*.py")} - {"__init__"}
    assert modules == VERBS
    rooms = {p.name for p in (REPO / "rlvr").iterdir() if (p / "__init__.py").exists()}
    assert {"study", "training", "data", "models", "runs", "merging", "evaluation"} <= rooms


def test_verifier_families_with_several_modules_have_rooms():
    flat = sorted(
        p.name for p in (REPO / "verifiers").glob("*.py") if p.stem.startswith(("code", "judge", "pool", "_pool"))
    )
    assert flat == []
    for room in ("code", "judge", "pool", "ifeval", "sandbox"):
        assert (REPO / "verifiers" / room / "__init__.py").exists(), room
