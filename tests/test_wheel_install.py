"""The wheel installs and runs outside the checkout: its config tree ships inside it, the entry
points run from any folder, and a user's own config folder joins ours (``hydra.searchpath``).

The fresh environment gets the wheel and nothing of the source tree; its dependencies come from
this environment's site-packages, added as a plain path (so the editable install's finder there
is not run and cannot put the checkout back on the path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # builds a wheel and runs three entry points: about a minute


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}\n{(done.stdout + done.stderr)[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment holding the built wheel; returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # build from a clean copy: setuptools reuses a source tree's build/ folder, so a module
    # deleted since an earlier build would ship again, and the checkout stays untouched
    source = root / "source"
    top = {".git", ".venv", "build", "dist", "outputs", "runs", "multirun", "wandb"}

    def junk(folder: str, names: list[str]) -> set[str]:  # the checkout's own outputs, at its top only
        here = {n for n in names if n in top} if Path(folder) == REPO else set()
        return here | {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}

    shutil.copytree(REPO, source, symlinks=True, ignore=junk)
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation"]
    _run([*build, "-w", str(root / "dist"), "-q"], root, env)
    (wheel,) = (root / "dist").glob("rlvr-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"rlvr/conf/train.yaml", "rlvr/conf/experiment/tiny_study.yaml"} <= names
    assert not any(n.startswith(("tests/", "conf/")) for n in names)

    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, env)
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, env)
    deps = "\n".join(dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))
    Path(purelib.stdout.strip(), "rlvr-deps.pth").write_text(deps + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    _run([*pip, str(wheel)], root, env)
    return venv / "bin"


@pytest.fixture
def elsewhere(tmp_path, rlvr_cache) -> tuple[Path, dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(RLVR_CACHE=str(rlvr_cache), HF_HUB_OFFLINE="1", WANDB_MODE="disabled", OMP_NUM_THREADS="1")
    return tmp_path, env


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, elsewhere):
    cwd, env = elsewhere
    code = "import rlvr, verifiers, tasks; print(rlvr.__file__, verifiers.__file__, tasks.__file__)"
    where = _run([str(installed / "python"), "-c", code], cwd, env).stdout.split()
    assert all(Path(w).is_relative_to(installed.parent) for w in where), where


def test_a_study_plans_from_any_folder_with_a_user_config_folder(installed, elsewhere):
    cwd, env = elsewhere
    done = _run([str(installed / "rlvr-study"), "experiment=demo", "study.dry_run=true"], cwd, env)
    assert "micro_math" in done.stdout and "expert-math-seed0" in done.stdout

    mine = cwd / "my_configs" / "experiment"
    mine.mkdir(parents=True)
    (mine / "mine.yaml").write_text("# @package _global_\nexperiment: mine\ntrainer:\n  max_steps: 7\n")
    search = f"hydra.searchpath=[file://{cwd / 'my_configs'}]"
    done = _run([str(installed / "rlvr-study"), search, "experiment=mine", "study.dry_run=true"], cwd, env)
    assert "experiment=mine" in done.stdout and search in done.stdout  # the stages compose from it too
    assert (cwd / "outputs").is_dir() is False  # a dry run writes nothing


def test_an_evaluation_runs_from_any_folder(installed, elsewhere, tiny_model_dir):
    cwd, env = elsewhere
    cmd = [
        str(installed / "rlvr-evaluate"),
        f"eval.models=['m={tiny_model_dir}']",
        "eval.tasks=[micro_math]",
        "eval.max_prompts=4",
        "eval.k=2",
        "eval.max_new_tokens=16",
        "logger=none",
        "eval.out_dir=results",
    ]
    _run(cmd, cwd, env)
    summary = json.loads((cwd / "results" / "eval" / "m" / "micro_math.json").read_text())
    assert summary["prompts"] == 4 and 0.0 <= summary["avg_at_k"] <= 1.0
