"""CI never hides a missing component: required skips fail under ``CI=true``, others still skip."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import _requirements as required
import pytest

TESTS = Path(__file__).resolve().parent
MISSING = "/nonexistent-shared-data-q7"
# One test per kind of skip; the root conftest is loaded as a plugin so its hook applies here.
SESSION = """
import _requirements as required
import pytest


@required.needs_shared_data()
def test_marked_on_shared_data():
    pass


@pytest.fixture
def math_data():
    return required.shared_data("math")


def test_fixture_on_shared_data(math_data):
    pass


def test_importorskip_of_a_required_dependency():
    pytest.importorskip("tqdm.no_such_module_q7")


def test_importorskip_of_an_optional_extra():
    pytest.importorskip("vllm.no_such_module_q7")


def test_plain_skip():
    pytest.skip("not applicable on this machine")
"""


def run_session(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_session.py").write_text(SESSION)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(
        RLVR_SHARED_DATA=MISSING,
        PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent)]),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",  # xdist, hypothesis, hydra's plugin: seconds to load
    )
    if ci is not None:
        env["CI"] = ci
    cmd = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-v", "-rA", "test_session.py"]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def outcomes(output: str) -> dict[str, str]:
    found = re.findall(r"^test_session\.py::(\w+) (PASSED|FAILED|SKIPPED|ERROR)", output, re.M)
    return dict(found)


def test_under_ci_a_missing_required_component_fails_and_names_it(tmp_path: Path) -> None:
    done = run_session(tmp_path, ci="true")
    assert done.returncode == 1, done.stdout[-3000:]
    assert outcomes(done.stdout) == {
        "test_marked_on_shared_data": "ERROR",  # skips in set-up fail as set-up errors
        "test_fixture_on_shared_data": "ERROR",
        "test_importorskip_of_a_required_dependency": "FAILED",
        "test_importorskip_of_an_optional_extra": "SKIPPED",
        "test_plain_skip": "SKIPPED",
    }, done.stdout[-3000:]
    assert f"shared data folder {MISSING} " in done.stdout
    assert f"shared data folder {MISSING}/math " in done.stdout
    assert "required dependency 'tqdm.no_such_module_q7'" in done.stdout


def test_without_ci_the_same_session_skips_with_the_reason(tmp_path: Path) -> None:
    done = run_session(tmp_path, ci=None)
    assert done.returncode == 0, done.stdout[-3000:]
    assert set(outcomes(done.stdout).values()) == {"SKIPPED"}, done.stdout[-3000:]
    assert len(outcomes(done.stdout)) == 5
    assert f"{required.TAG} shared data folder {MISSING}" in done.stdout


@pytest.mark.parametrize(
    ("reason", "fails"),
    [
        (f"{required.TAG} sandbox backend bwrap is installed but fails: x", True),
        ("could not import 'trl': No module named 'trl'", True),
        ("could not import 'hydra_plugins.hydra_submitit_launcher.config': no", True),
        ("could not import 'vllm': No module named 'vllm'", False),
        ("needs an NVIDIA GPU", False),
        ("sandbox backend nsjail is not installed here: not on PATH", False),
    ],
)
def test_which_skips_count_as_required(reason: str, fails: bool) -> None:
    assert (required.required_skip(reason) is not None) is fails


def test_required_extras_are_the_ones_setup_installs() -> None:
    script = (TESTS.parent / "scripts" / "setup_env.sh").read_text()
    extras = re.search(r'EXTRAS="\$\{EXTRAS:-([\w,]+)\}"', script)
    assert extras and tuple(extras.group(1).split(",")) == required.REQUIRED_EXTRAS
