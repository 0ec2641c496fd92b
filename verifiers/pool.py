"""Batch verification in warm worker processes with a hard per-item time limit.

Each worker is a separate interpreter (``python -m verifiers._pool_worker``) in its own
session. An item that overruns ``timeout_s`` gets a ``timeout`` verdict and its worker is
killed with its whole process group and replaced. A worker that dies mid-item (OOM killer,
a crash in a C extension, a stray signal) is replaced and the item goes back in the queue;
an item that kills ``MAX_ITEM_ATTEMPTS`` workers gets an ``error`` verdict (an infrastructure
failure the trainer counts), so a poisonous input cannot hang a batch. Results come back in
input order and do not depend on scheduling.

Workers are plain subprocesses rather than ``multiprocessing`` children: spawn/forkserver
children re-import the caller's ``__main__`` (a trainer importing torch), and fork copies a
threaded parent. A replacement starts in the background and takes items once it is ready.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from verifiers._pool_worker import READY
from verifiers.reasoning import ReasoningFormat
from verifiers.registry import Verifier
from verifiers.verdict import Verdict, clip

log = logging.getLogger(__name__)

MAX_WORKERS = 8
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MEMORY_MB = 4096  # per worker; a runaway sympy expansion must not take the machine
START_TIMEOUT_S = 120.0  # a cold interpreter importing sympy on a loaded machine
MAX_CHUNK = 32  # items per message to a worker
MAX_START_FAILURES = 3  # consecutive: a broken environment, not bad luck
MAX_ITEM_ATTEMPTS = 2  # workers one item may lose; a second death is the item's doing

Item = tuple[Any, Mapping[str, Any], "str | Verifier"]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


@dataclass
class _Batch:
    """One ``verify_batch`` call: verdicts so far, items not yet sent, worker deaths per item."""

    results: list[Verdict | None]
    pending: deque[tuple[int, bytes]] = field(default_factory=deque)
    deaths: Counter[int] = field(default_factory=Counter)

    def requeue(self, items: deque[tuple[int, bytes]]) -> None:
        self.pending.extendleft(reversed(items))
        items.clear()


class _Worker:
    """One worker process and its two pipe ends; ``ready`` once its imports are done."""

    def __init__(self, config: dict[str, Any]) -> None:
        child_read, parent_write = os.pipe()
        parent_read, child_write = os.pipe()
        package_root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verifiers._pool_worker", str(child_read), str(child_write)],
            pass_fds=(child_read, child_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        os.close(child_read)
        os.close(child_write)
        self.inbox = Connection(parent_read, writable=False)
        self.outbox = Connection(parent_write, readable=False)
        self.outbox.send(config)
        self.ready = False
        self.started = time.monotonic()
        self.inflight: deque[tuple[int, bytes]] = deque()  # sent, not yet answered
        self.deadline = 0.0
        self.limit = 0.0

    @property
    def busy(self) -> bool:
        return bool(self.inflight)

    def submit(self, chunk: list[tuple[int, bytes]], timeout_s: float) -> None:
        """Send a chunk; the worker answers item by item, each within ``timeout_s``."""
        self.outbox.send(chunk)
        self.inflight.extend(chunk)
        self.limit = timeout_s
        self.deadline = time.monotonic() + timeout_s

    def answered(self, index: int) -> None:
        head, _ = self.inflight.popleft()
        if head != index:
            raise RuntimeError(f"worker answered item {index}, expected {head}")
        self.deadline = time.monotonic() + self.limit  # the next item's clock starts now

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.inbox.close()
        self.outbox.close()

    def stop(self) -> None:
        try:
            self.outbox.send(None)
            self.proc.wait(timeout=2.0)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


class VerifierPool:
    """Reusable pool of verifier workers; use as a context manager to keep them warm.

        with VerifierPool(timeout_s=10) as pool:          # once per training run
            verdicts = pool.verify_batch([(completion, reference, "math"), ...])

    One caller thread at a time (the trainer's reward call); it is not thread-safe.

    timeout_s: wall-clock limit per item, measured from when the item reaches a worker.
    reasoning: default ``ReasoningFormat`` for ``verify_batch`` calls.
    memory_limit_mb: address-space cap per worker (None: no cap); exceeding it grades the
        item ``timeout`` ("memory limit exceeded"), not ``error``.
    options: keyword options per verifier name, used when an item names its verifier
        (``{"math": {"fallback_last_number": True}}``); items may also carry built verifiers.
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        reasoning: ReasoningFormat = ReasoningFormat(),
        memory_limit_mb: int | None = DEFAULT_MEMORY_MB,
        options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.size = max(1, min(workers or default_workers(), MAX_WORKERS))
        self.timeout_s = timeout_s
        self.reasoning = reasoning
        self._config = {
            "sys_path": list(sys.path),
            "memory_limit_mb": memory_limit_mb,
            "options": {name: dict(opts) for name, opts in (options or {}).items()},
        }
        self._workers: list[_Worker] = []
        self.restarts = 0
        self._start_failures = 0

    def __enter__(self) -> VerifierPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        while len(self._workers) < self.size:
            self._workers.append(_Worker(self._config))

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def verify_batch(
        self,
        items: Sequence[Item],
        *,
        timeout_s: float | None = None,
        reasoning: ReasoningFormat | None = None,
    ) -> list[Verdict]:
        """Verdicts for ``(completion, reference, verifier name or object)`` items, in order."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        fmt = self.reasoning if reasoning is None else reasoning
        batch = _Batch([None] * len(items))
        for i, (completion, reference, verifier) in enumerate(items):
            try:
                batch.pending.append(
                    (i, pickle.dumps((completion, dict(reference), verifier, fmt)))
                )
            except Exception as exc:  # an unpicklable verifier is a setup bug: say which
                batch.results[i] = Verdict.error(clip(f"item cannot be sent to a worker: {exc!r}"))
        self.start()
        while batch.pending or any(w.busy for w in self._workers):
            self._dispatch(batch.pending, limit)
            self._collect(batch)
        return [v if v is not None else Verdict.error("pool lost the item") for v in batch.results]

    def _dispatch(self, pending: deque[tuple[int, bytes]], limit: float) -> None:
        # chunks amortise pipe round trips; small enough that work stays spread out
        size = max(1, min(MAX_CHUNK, len(pending) // (4 * len(self._workers))))
        for slot, worker in enumerate(self._workers):
            if pending and worker.ready and not worker.busy:
                chunk = [pending.popleft() for _ in range(min(size, len(pending)))]
                try:
                    worker.submit(chunk, limit)
                except OSError:  # died while idle: replace it and retry the chunk
                    pending.extendleft(reversed(chunk))
                    worker.inflight.clear()
                    self._replace(slot)

    def _collect(self, batch: _Batch) -> None:
        now = time.monotonic()
        waits = [w.deadline - now for w in self._workers if w.busy] + [1.0]
        ready = wait([w.inbox for w in self._workers], timeout=max(0.0, min(waits)))
        for slot, worker in enumerate(list(self._workers)):
            if worker.inbox in ready:
                self._drain(slot, worker, batch)
            elif worker.busy and time.monotonic() >= worker.deadline:
                overran = Verdict.timeout(f"exceeded {worker.limit:g} s per item")
                self._fail_head(slot, batch, overran)
            elif not worker.ready and time.monotonic() - worker.started > START_TIMEOUT_S:
                log.error("verifier worker did not start within %.0f s", START_TIMEOUT_S)
                self._replace(slot)

    def _fail_head(self, slot: int, batch: _Batch, verdict: Verdict | None) -> None:
        """The item in progress gets ``verdict`` (None: back in the queue, first); the rest of
        its chunk goes back in the queue and the worker is replaced."""
        worker = self._workers[slot]
        if verdict is not None:
            index, _ = worker.inflight.popleft()
            batch.results[index] = verdict
        batch.requeue(worker.inflight)
        self._replace(slot)

    def _died(self, slot: int, batch: _Batch, code: int | None) -> None:
        """A worker died mid-item: the item goes to a fresh worker, up to the attempt limit."""
        index = self._workers[slot].inflight[0][0]
        batch.deaths[index] += 1
        n = batch.deaths[index]
        log.warning("verifier worker died (exit code %s) on item %d, death %d", code, index, n)
        lost = f"verifier worker died on this item {n} times (last exit code {code})"
        self._fail_head(slot, batch, Verdict.error(lost) if n >= MAX_ITEM_ATTEMPTS else None)

    def _drain(self, slot: int, worker: _Worker, batch: _Batch) -> None:
        """Take every message already waiting from this worker (one wait() per burst)."""
        while True:
            self._receive(slot, worker, batch)
            if self._workers[slot] is not worker or not worker.inbox.poll():
                return

    def _receive(self, slot: int, worker: _Worker, batch: _Batch) -> None:
        try:
            tag, value = worker.inbox.recv()
        except (EOFError, OSError):
            try:
                code = worker.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
            if worker.busy:
                self._died(slot, batch, code)
                return
            if not worker.ready:
                self._start_failures += 1
                if self._start_failures >= MAX_START_FAILURES:
                    raise RuntimeError(
                        f"verifier workers keep exiting during start-up (exit code {code}); "
                        f"run `{sys.executable} -m verifiers._pool_worker` to see why"
                    ) from None
            self._replace(slot)
            return
        if tag == READY:
            worker.ready = True
            self._start_failures = 0
            return
        worker.answered(tag)
        batch.results[tag] = value

    def _replace(self, slot: int) -> None:
        self._workers[slot].kill()
        self._workers[slot] = _Worker(self._config)
        self.restarts += 1


def verify_batch(
    items: Sequence[Item],
    *,
    workers: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    reasoning: ReasoningFormat = ReasoningFormat(),
) -> list[Verdict]:
    """One-off batch through a fresh pool; keep a ``VerifierPool`` open to reuse workers."""
    if not items:
        return []
    size = min(workers or default_workers(), len(items))
    with VerifierPool(size, timeout_s=timeout_s, reasoning=reasoning) as pool:
        return pool.verify_batch(items)
