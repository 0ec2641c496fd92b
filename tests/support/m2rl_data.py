"""Stand-ins for the local data ``m2rl_study`` needs and no Hub read gives: math rows and the
workbench tables, so a test plans the study as a user who has supplied them would."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.schema import make_row


def canonical_rows(path: Path, domain: str, n: int) -> Path:
    """``n`` rows in the canonical schema (DESIGN.md section 3), as JSONL."""
    with path.open("w") as fh:
        for i in range(n):
            row = make_row(
                prompt=[{"role": "user", "content": f"What is {i} + 1?"}],
                domain=domain,
                verifier="math",
                reference={"answer": str(i + 1)},
                source="local/train",
                id=str(i),
            )
            fh.write(json.dumps(row) + "\n")
    return path


def workbench_tables(folder: Path) -> Path:
    """A folder holding every workbench table file (what the plan checks is that they exist)."""
    from tasks.environments import workbench_data

    for path in workbench_data.missing_files(folder):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("id\n")
    return folder


def m2rl_local_data(folder: Path, monkeypatch, math_rows: int = 3) -> list[str]:
    """Study overrides that give math local canonical rows; the workbench tables through
    ``RLVR_WORKBENCH_DATA`` (set with ``monkeypatch``)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = canonical_rows(folder / "math.jsonl", "math", math_rows)
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(workbench_tables(folder / "csv_data")))
    return ["domains.math.train_tasks=[rows_math]", f"domains.math.data_files=[{rows}]"]
