"""Read a W&B run back from its transaction log (``run-<id>.wandb``), offline.

The log is LevelDB's log format (32 KiB blocks of checksummed, possibly fragmented records) after
a 7-byte header, each record a ``wandb_internal_pb2.Record``. wandb ships the schema but no Python
reader of the framing, so this module decodes the framing and leaves the records to wandb's own
protobuf classes. It is what the tests and docs/tracking.md use to show what a stage logged.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = struct.Struct("<4sHB")  # ident, magic, version
IDENT, MAGIC = b":W&B", 0xBEE1
BLOCK = 32 * 1024
CHUNK = struct.Struct("<IHB")  # crc32 of type + data, data length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


class TransactionLogError(ValueError):
    """The file is not a W&B transaction log, or is corrupt; the message names the offset."""


@dataclass
class RunLog:
    """What one run logged: its identity, config, history rows (``_step`` in each), summary."""

    run: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    resumed: bool = False
    finished: bool = False  # the run's exit record is in the log (wandb writes it last)

    def keys(self) -> set[str]:
        """Every history key the run logged."""
        return {k for row in self.history for k in row}

    def steps(self) -> list[int]:
        return [row["_step"] for row in self.history]


def payloads(path: str | Path) -> Iterator[bytes]:
    """The log's records as bytes, fragments joined, checksums checked; a record cut short at
    the end of the file (a process killed while writing) ends the log."""
    data = Path(path).read_bytes()
    if len(data) < HEADER.size or HEADER.unpack_from(data)[:2] != (IDENT, MAGIC):
        raise TransactionLogError(f"{path}: not a W&B transaction log (no :W&B header)")
    pos, pending = HEADER.size, b""
    while pos + CHUNK.size <= len(data):
        room = BLOCK - pos % BLOCK
        if room < CHUNK.size:  # a block's tail too short for a chunk header is padding
            pos += room
            continue
        crc, length, kind = CHUNK.unpack_from(data, pos)
        body = data[pos + CHUNK.size : pos + CHUNK.size + length]
        if kind == 0 and length == 0:  # zero padding written at the end of a log
            break
        if len(body) < length:  # the tail a killed process left half written
            return
        if zlib.crc32(bytes([kind]) + body) != crc:
            raise TransactionLogError(f"{path}: corrupt record at byte {pos}")
        pos += CHUNK.size + length
        if kind == FULL:
            yield body
        elif kind == FIRST:
            pending = body
        elif kind == MIDDLE:
            pending += body
        elif kind == LAST:
            yield pending + body
            pending = b""
        else:
            raise TransactionLogError(f"{path}: unknown record type {kind} at byte {pos}")


def records(path: str | Path) -> Iterator[Any]:
    """The log's ``Record`` messages, decoded by wandb's own schema."""
    from wandb.proto import wandb_internal_pb2 as pb

    for body in payloads(path):
        record = pb.Record()
        record.ParseFromString(body)
        yield record


def read_run(path: str | Path) -> RunLog:
    """Identity, config, history and summary of the run in one transaction log."""
    out = RunLog()
    for rec in records(path):
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            r = rec.run
            out.resumed = out.resumed or r.resumed
            out.run = {
                "id": r.run_id,
                "name": r.display_name,
                "group": r.run_group,
                "job_type": r.job_type,
                "tags": list(r.tags),
                "project": r.project,
            }
            out.config.update(_items(r.config.update))
        elif kind == "config":
            out.config.update(_items(rec.config.update))
        elif kind == "history":
            row = _items(rec.history.item)
            row.setdefault("_step", rec.history.step.num)
            out.history.append(row)
        elif kind == "summary":
            out.summary.update(_items(rec.summary.update))
        elif kind == "exit":
            out.finished = True
    return out


def read_finished_run(path: str | Path, timeout_s: float = 60.0) -> RunLog:
    """``read_run`` once the log holds the run's exit record: W&B's writer may still be
    flushing the last records when ``finish()`` returns. Raises TimeoutError with what it read."""
    deadline = time.monotonic() + timeout_s
    while True:
        logged = read_run(path)
        if logged.finished:
            return logged
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path}: no exit record after {timeout_s:.0f} s ({len(logged.history)} rows read)")
        time.sleep(0.2)


def _items(items: Any) -> dict[str, Any]:
    return {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in items}


def find_logs(folder: str | Path) -> list[Path]:
    """Every transaction log under ``folder`` (a run folder's ``wandb/`` tree), oldest first."""
    return sorted(Path(folder).rglob("run-*.wandb"), key=lambda p: p.stat().st_mtime)
