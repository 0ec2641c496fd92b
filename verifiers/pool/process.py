"""The pool's handle on one worker process: its pipes, its progress cell, the chunk in flight."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from verifiers.pool.progress import ProgressCell, new_cell_fd
from verifiers.pool.wire import Entry
from verifiers.pool.worker import STOP

CHUNKS_IN_FLIGHT = 2


class WorkerProcess:
    """One worker process, its two pipe ends and its progress cell; ``ready`` once its
    imports are done."""

    def __init__(self, config: dict[str, Any]) -> None:
        child_read, parent_write = os.pipe()
        parent_read, child_write = os.pipe()
        cell_fd = new_cell_fd()
        package_root = str(Path(__file__).resolve().parents[2])  # holds verifiers/
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        fds = (child_read, child_write, cell_fd)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verifiers.pool.worker", *map(str, fds)],
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
        self.inflight: list[Entry] = []  # the chunks sent, not yet answered, in order
        self.chunks: deque[int] = deque()  # their sizes
        self.answered = 0  # items answered over the worker's life
        self.sent_at = 0.0  # when the worker, idle, was last given a chunk
        self.limit = 0.0

    @property
    def busy(self) -> bool:
        return bool(self.inflight)

    @property
    def has_room(self) -> bool:
        """A second chunk waits in the pipe while the first runs, so the worker never idles
        for a round trip between chunks."""
        return len(self.chunks) < CHUNKS_IN_FLIGHT

    def submit(self, chunk: list[Entry], message: bytes, timeout_s: float) -> None:
        self.outbox.send_bytes(message)
        if not self.inflight:
            self.sent_at = time.monotonic()
        self.inflight.extend(chunk)
        self.chunks.append(len(chunk))
        self.limit = timeout_s

    def take_answered(self) -> list[Entry]:
        """The first chunk in flight, now answered."""
        size = self.chunks.popleft()
        done, self.inflight = self.inflight[:size], self.inflight[size:]
        self.answered += size
        return done

    def running(self) -> tuple[int, float]:
        """The position in ``inflight`` of the item in progress, and when it started: the
        previous item's end, or the send to an idle worker, whichever is later; position
        ``len(inflight)``: all done, answers on their way."""
        count, at = self.cell.read()
        return count - self.answered, max(at, self.sent_at)

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
