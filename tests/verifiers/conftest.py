"""Fixtures for verifier tests: the shared evaluation data folder (required under CI)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import _requirements as required
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# tests/ is on sys.path (the root conftest), where tests/verifiers would import as a namespace
# package shadowing the real one; a regular package anywhere on sys.path wins over it.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return required.shared_data()


def _read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


@pytest.fixture(scope="session")
def read_jsonl() -> Callable[[Path], Iterator[dict]]:
    """The JSON Lines reader, as a fixture so tests need not import this conftest."""
    return _read_jsonl
