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


def _module_names() -> dict[str, Path]:
    names = {}
    for package in ("rlvr", "verifiers", "tasks"):
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _runtime_imports(path: Path, module: str) -> set[str]:
    """Every name a module imports when it runs, function-local imports included; imports under
    ``if TYPE_CHECKING:`` never run and are left out."""
    tree = ast.parse(path.read_text())
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def _import_graph() -> dict[str, set[str]]:
    modules = _module_names()

    def owner(name: str) -> str | None:  # the module a dotted import name lands in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {owner(name) for name in _runtime_imports(path, module)}
        # a module importing its own packages is Python's order of loading, not a cycle
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_modules():
    """A function-local import does not hide a cycle here: one module's change then breaks the
    other's import order in ways no test names."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles (move the shared part into a module below both):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_check_sees_a_function_local_cycle(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x.y\n"
        "def f():\n    from rlvr.study import launchers\n"
    )
    assert _runtime_imports(module, "p.m") >= {"rlvr.study", "rlvr.study.launchers"}
    assert "x.y" not in _runtime_imports(module, "p.m")
