"""Task tests read the workbench's tables from the invented fixture copy of NeMo Gym's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

WORKBENCH_DATA = Path(__file__).resolve().parents[1] / "fixtures" / "workbench" / "csv_data"


@pytest.fixture(autouse=True)
def workbench_data(monkeypatch) -> Path:
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(WORKBENCH_DATA))
    return WORKBENCH_DATA
