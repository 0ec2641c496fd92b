"""Resumable evaluation shards on disk: a benchmark's prompts in slices, each written once graded.

A slice's records are written atomically as soon as it is graded, and a rerun reads them back
instead of evaluating the slice again.

``<study>/eval/<label>/.<benchmark>.shards/<index>.json`` holds one shard: the key of what
decided its records (weights, settings, decoding, format gate), the ids of its prompts, its
generation time and its records. A shard whose key or prompts differ (the settings changed
since it was written) is evaluated again. The folder is removed once the benchmark's results
are written: they hold every record.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shard:
    """Prompts ``start`` .. ``stop`` (excluded) of a benchmark, the ``index``-th slice."""

    index: int
    start: int
    stop: int


@dataclass(frozen=True)
class ShardResult:
    """A graded shard: its records (every mode) and the seconds its generation and grading took."""

    records: list[dict[str, Any]]
    sampling_s: float


def shard_ranges(prompts: int, size: int) -> list[Shard]:
    """Consecutive slices of ``size`` prompts (the last may be shorter); ``size`` 0: one slice."""
    step = size if size > 0 else max(prompts, 1)
    return [Shard(i, start, min(start + step, prompts)) for i, start in enumerate(range(0, prompts, step))]


class ShardStore:
    """The finished shards of one model on one benchmark, under ``key`` (see the module)."""

    def __init__(self, folder: Path, bench: str, key: str) -> None:
        self.folder = folder / f".{bench}.shards"
        self.key = key

    def path(self, shard: Shard) -> Path:
        return self.folder / f"{shard.index:05d}.json"

    def load(self, shard: Shard, ids: Sequence[str]) -> ShardResult | None:
        """The shard's result if one was written with this key for these prompts, else None."""
        path = self.path(shard)
        if not path.is_file():
            return None
        try:
            stored = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):  # a damaged file: evaluate the shard again
            log.warning("%s is unreadable: evaluating its prompts again", path)
            return None
        if stored.get("key") != self.key or stored.get("ids") != list(ids):
            log.warning("%s was written with other settings: evaluating it again", path)
            return None
        return ShardResult(stored["records"], float(stored["sampling_s"]))

    def save(self, shard: Shard, ids: Sequence[str], result: ShardResult) -> None:
        """Write the shard at once or not at all (a kill mid-write leaves only a temporary)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        payload = {
            "key": self.key,
            "ids": list(ids),
            "sampling_s": result.sampling_s,
            "records": result.records,
        }
        path = self.path(shard)
        tmp = path.with_name(f".{path.name}.tmp")
        with tmp.open("w") as fh:
            json.dump(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it counts as done (a node can die too)
        tmp.replace(path)

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
