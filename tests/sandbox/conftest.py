"""Fixtures for sandbox tests: one code verifier per backend that works here (others skipped)."""

from __future__ import annotations

import pytest

from verifiers import get_verifier
from verifiers.sandbox import BACKEND_NAMES, Sandbox, get_sandbox, probe

TEST_WORKERS = 2


@pytest.fixture(scope="session", params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> str:
    reason = probe(request.param)
    if reason is not None:
        pytest.skip(f"sandbox backend {request.param} unavailable here: {reason}")
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
