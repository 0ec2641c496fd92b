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
            offenders += [
                f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in FORBIDDEN
            ]
    assert offenders == []


def test_importing_verifiers_and_tasks_loads_no_torch():
    code = "import sys, verifiers, tasks, tasks.registry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
