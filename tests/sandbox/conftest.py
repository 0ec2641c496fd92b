"""Fixtures for sandbox tests: one code verifier per backend that works here (others skipped).

A backend whose tool is installed but fails its probe is a broken sandbox, not an absent one:
it skips as a required component (a failure under CI). rlimit needs no tool, so it always is.
"""

from __future__ import annotations

import shutil

import _requirements as required
import pytest

from verifiers import get_verifier
from verifiers.sandbox import BACKEND_NAMES, Sandbox, get_sandbox, probe
from verifiers.sandbox.backends import BackendUnavailable, nsjail_path

TEST_WORKERS = 2


def installed(name: str) -> bool:
    """Is the backend's binary or module present (whether or not it works here)?"""
    if name == "nsjail":
        try:
            nsjail_path()
        except BackendUnavailable:
            return False
        return True
    return name == "rlimit" or shutil.which(name) is not None


@pytest.fixture(scope="session", params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> str:
    reason = probe(request.param)
    if reason is not None:
        if installed(request.param):
            required.missing(f"sandbox backend {request.param} is installed but fails: {reason}")
        pytest.skip(f"sandbox backend {request.param} is not installed here: {reason}")
    return request.param


@pytest.fixture(scope="session")
def code_verifier(backend: str):
    """Short limits keep hostile tests fast: 1 s per test, 2 s per sample, 256 MB."""
    return get_verifier(
        "code",
        sandbox=backend,
        workers=TEST_WORKERS,
        test_time_limit_s=1.0,
        sample_time_limit_s=2.0,
        memory_mb=256,
    )


@pytest.fixture(scope="session")
def box(backend: str) -> Sandbox:
    """The shared sandbox the code verifier above uses too (same backend and worker count)."""
    return get_sandbox(backend, workers=TEST_WORKERS)
