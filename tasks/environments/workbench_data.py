"""The workbench's databases: NeMo Gym workplace_assistant's CSV tables, found, read and compared.

The blend's agent rows (NeMo Gym's workplace assistant, called ``workbench`` in the blend) name
records of five fixed databases (emails, calendar, project tasks, CRM, web analytics) and a
company directory by id, so their gold calls mean nothing without those tables. They are not
shipped here: point ``RLVR_WORKBENCH_DATA`` at a copy of NeMo Gym's
``resources_servers/workplace_assistant/csv_data`` folder (``processed/*.csv`` and
``raw/email_addresses.csv``), or put it under ``<shared data>/agent/workplace_assistant/csv_data``.
"""

from __future__ import annotations

import copy
import csv
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tasks.spec import shared_data_dir

DATA_ENV = "RLVR_WORKBENCH_DATA"
SHARED_SUBDIR = Path("agent") / "workplace_assistant" / "csv_data"
SOURCE_HINT = (
    "copy NeMo Gym's resources_servers/workplace_assistant/csv_data folder "
    f"(github.com/NVIDIA-NeMo/Gym) to <shared data>/{SHARED_SUBDIR} or set {DATA_ENV} to it"
)

# table -> file under csv_data/processed; the first column of each holds the record id
FILES: Mapping[str, str] = {
    "emails": "emails.csv",
    "calendar": "calendar_events.csv",
    "analytics": "analytics_data.csv",
    "project_tasks": "project_tasks.csv",
    "crm": "customer_relationship_manager_data.csv",
}
DIRECTORY_FILE = Path("raw") / "email_addresses.csv"
# The tables an episode can change, hence the ones NeMo Gym compares; "plots" starts empty.
SCORED_TABLES = ("calendar", "emails", "plots", "project_tasks", "crm")
# NeMo Gym lowercases every compared string except these columns, whose case matters.
CASE_SENSITIVE = frozenset({"status", "list_name", "board"})
CURRENT_TIME = "2023-11-30 23:59:00"  # NeMo Gym's fixed "now" (sent_datetime of new email)

Table = list[dict[str, Any]]
State = dict[str, Table]


class DatabaseMissingError(FileNotFoundError):
    """The workbench tables are not where we looked; the message says where to put them."""


def database_dir() -> Path:
    """Where the tables are read from: ``$RLVR_WORKBENCH_DATA``, else the shared data folder."""
    configured = os.environ.get(DATA_ENV)
    return Path(configured).expanduser() if configured else shared_data_dir() / SHARED_SUBDIR


def missing_files(folder: Path) -> list[Path]:
    wanted = [folder / "processed" / name for name in FILES.values()] + [folder / DIRECTORY_FILE]
    return [path for path in wanted if not path.is_file()]


@functools.lru_cache(maxsize=4)
def _read(folder: str) -> tuple[State, tuple[str, ...]]:
    root = Path(folder)
    missing = missing_files(root)
    if missing:
        raise DatabaseMissingError(
            f"workbench database incomplete at {root} (missing {missing[0].name}); {SOURCE_HINT}"
        )
    state: State = {}
    for table, name in FILES.items():
        # Every value stays text, as NeMo Gym reads them (dtype=str), except empty cells,
        # which it reads as missing values.
        with open(root / "processed" / name, newline="", encoding="utf-8") as fh:
            state[table] = [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(fh)]
    for row in state["analytics"]:
        row["user_engaged"] = row["user_engaged"] == "True"
    state["plots"] = []
    with open(root / DIRECTORY_FILE, encoding="utf-8") as fh:
        directory = tuple(line.strip() for line in fh if line.strip())
    return state, directory


def load_database(folder: str | os.PathLike[str]) -> tuple[State, tuple[str, ...]]:
    """A fresh copy of the tables and the directory's addresses (parsed once per folder).
    The analytics table is shared, not copied: no tool writes to it."""
    state, directory = _read(str(Path(folder).expanduser().resolve()))
    fresh = {t: copy.deepcopy(rows) for t, rows in state.items() if t != "analytics"}
    return {**fresh, "analytics": state["analytics"]}, directory


def snapshot(state: Mapping[str, Table]) -> dict[str, list[tuple[tuple[str, Any], ...]]]:
    """The compared form of the changeable tables: rows in order (NeMo Gym compares data
    frames, so order counts), strings lowercased outside ``CASE_SENSITIVE`` columns."""

    def cell(column: str, value: Any) -> Any:
        return value.lower() if isinstance(value, str) and column not in CASE_SENSITIVE else value

    return {table: [tuple((k, cell(k, v)) for k, v in row.items()) for row in state[table]] for table in SCORED_TABLES}


def next_id(table: Table, column: str, width: int = 8) -> str:
    """NeMo Gym's new-record id: the largest id as text, plus one, zero-padded to ``width``
    (0: unpadded, as new emails get); "1" for an empty table."""
    if not table:
        return "1".zfill(width)
    return str(int(max(str(row[column]) for row in table)) + 1).zfill(width)
