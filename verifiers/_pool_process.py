"""The pool's handle on one worker process: its pipes, its progress cell, the chunk in flight."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from verifiers._pool_progress import ProgressCell, new_cell_fd
from verifiers._pool_wire import Entry
from verifiers._pool_worker import STOP


class WorkerProcess:
    """One worker process, its two pipe ends and its progress cell; ``ready`` once its
    imports are done."""

    def __init__(self, config: dict[str, Any]) -> None:
        child_read, parent_write = os.pipe()
        parent_read, child_write = os.pipe()
        cell_fd = new_cell_fd()
        package_root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        fds = (child_read, child_write, cell_fd)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verifiers._pool_worker", *map(str, fds)],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        os.close(child_read)
        os.close(child_write)
        self.cell = ProgressCell(cell_fd)
        self.inbox = Connection(parent_read, writable=False)
        self.outbox = Connection(parent_write, readable=False)
        self.outbox.send(config)
        self.ready = False
        self.started = time.monotonic()
        self.inflight: list[Entry] = []  # the chunk sent, not yet answered
        self.answered = 0  # items answered over the worker's life; its progress count at send
        self.sent_at = 0.0
        self.limit = 0.0

    @property
    def busy(self) -> bool:
        return bool(self.inflight)

    def submit(self, chunk: list[Entry], message: bytes, timeout_s: float) -> None:
        self.outbox.send_bytes(message)
        self.inflight = chunk
        self.limit = timeout_s
        self.sent_at = time.monotonic()

    def running(self) -> tuple[int, float]:
        """The chunk position of the item in progress, and when it started (the previous
        item's end, or the send); position ``len(inflight)``: all done, answer on its way."""
        count, at = self.cell.read()
        position = count - self.answered
        return position, (at if position > 0 else self.sent_at)

    def deadline(self) -> float:
        position, started = self.running()
        return math.inf if position >= len(self.inflight) else started + self.limit

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.inbox.close()
        self.outbox.close()
        self.cell.close()

    def stop(self) -> None:
        try:
            self.outbox.send_bytes(STOP)
            self.proc.wait(timeout=2.0)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
