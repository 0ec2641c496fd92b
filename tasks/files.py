"""Local copies of a task's source: JSON Lines / JSON / CSV / Parquet readers, ``$RLVR_TASK_FILES``.

``RLVR_TASK_FILES`` points tasks at local copies for every caller (training, evaluation, the
data report): ``gpqa_diamond=/data/gpqa_diamond.csv;mmlu_redux=/data/redux.jsonl``, entries
separated by ``;``, several files of one task by ``,``. A copy is read instead of the
shared-data file and the Hub, and checked against the task's ``required_columns`` row by row.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

TASK_FILES_ENV = "RLVR_TASK_FILES"


def read_json_records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSON Lines file (optionally gzipped, read line by line) or a JSON array file."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        head = fh.read(4096)
        if head.lstrip().startswith("["):
            yield from json.loads(head + fh.read())
            return
        fh.seek(0)
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_files(files: Sequence[str]) -> Iterator[Mapping[str, Any]]:
    """Records of local files in order: Parquet, CSV (e.g. GPQA's release), else JSON/JSONL."""
    for name in files:
        path = Path(name)
        if path.suffix == ".parquet":
            import datasets

            yield from datasets.load_dataset("parquet", data_files=str(path), split="train")
        elif path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as fh:
                yield from csv.DictReader(fh)
        else:
            yield from read_json_records(path)


def parse_task_files(value: str | None = None) -> dict[str, tuple[str, ...]]:
    """``{task: paths}`` from ``$RLVR_TASK_FILES`` (or ``value``); a malformed entry raises."""
    value = os.environ.get(TASK_FILES_ENV, "") if value is None else value
    found: dict[str, tuple[str, ...]] = {}
    for entry in filter(None, (e.strip() for e in value.split(";"))):
        task, sep, paths = entry.partition("=")
        files = tuple(str(Path(p.strip()).expanduser()) for p in paths.split(",") if p.strip())
        if not sep or not task.strip() or not files:
            raise ValueError(
                f"{TASK_FILES_ENV}: entry {entry!r} is not '<task>=<file>[,<file>...]' (entries separated by ';')"
            )
        found[task.strip()] = files
    return found
