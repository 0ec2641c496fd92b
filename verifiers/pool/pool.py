"""Batch verification in warm worker processes with a hard per-item time limit.

Each worker is a separate interpreter (``python -m verifiers.pool.worker``) in its own
session. Items travel in chunks, one message each way per chunk, sized from the measured
per-item cost of each verifier: cheap checks (a multiple-choice letter, microseconds) go
hundreds at a time so pipe round trips do not dominate, slow ones (sympy, IFEval) a few at a
time so the work stays spread over the workers. The time limit stays per item: the worker
marks a shared progress cell after every item, so the pool knows which item of a chunk is
running and since when. An item that overruns ``timeout_s`` gets a ``timeout`` verdict and
its worker is killed with its whole process group and replaced; the rest of its chunk goes
back in the queue. A worker that dies mid-item (OOM killer, a crash in a C extension, a stray
signal) is replaced and the item goes back in the queue; an item that kills
``MAX_ITEM_ATTEMPTS`` workers gets an ``error`` verdict (an infrastructure failure the trainer
counts), so a poisonous input cannot hang a batch. Results come back in input order and do
not depend on scheduling.

Workers are plain subprocesses rather than ``multiprocessing`` children: spawn/forkserver
children re-import the caller's ``__main__`` (a trainer importing torch), and fork copies a
threaded parent. A replacement starts in the background and takes items once it is ready.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from multiprocessing.connection import wait
from typing import Any

from verifiers.pool.process import WorkerProcess
from verifiers.pool.wire import (
    Entry,
    cost_key,
    encode_chunk,
    pickled_verifier,
    verdict_from_answer,
)
from verifiers.pool.worker import READY
from verifiers.reasoning import ReasoningFormat
from verifiers.registry import Verifier
from verifiers.verdict import Verdict

log = logging.getLogger(__name__)

MAX_WORKERS = 8
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MEMORY_MB = 4096  # per worker; a runaway sympy expansion must not take the machine
START_TIMEOUT_S = 120.0  # a cold interpreter importing sympy on a loaded machine
MAX_START_FAILURES = 3  # consecutive: a broken environment, not bad luck
MAX_ITEM_ATTEMPTS = 2  # workers one item may lose; a second death is the item's doing
CHUNK_SECONDS = 0.02  # work per message: round trips (~0.1 ms) stay a small fraction
MIN_CHUNK_SECONDS = 0.002  # below this a chunk is mostly round trip
CHUNKS_PER_WORKER = 2  # at least this many chunks per worker in a batch, so the tail balances
UNKNOWN_COST_S = 0.002  # a verifier not measured yet: small first chunks, then measured ones

Item = tuple[Any, Mapping[str, Any], "str | Verifier"]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


@dataclass
class _Batch:
    """One ``verify_batch`` call: verdicts so far, entries not yet sent, worker deaths per item."""

    results: list[Verdict | None]
    pending: deque[Entry] = field(default_factory=deque)
    deaths: Counter[int] = field(default_factory=Counter)
    verdicts: dict[tuple, Verdict] = field(default_factory=dict)  # equal answers, one Verdict

    def requeue(self, entries: Sequence[Entry]) -> None:
        self.pending.extendleft(reversed(entries))


class VerifierPool:
    """Reusable pool of verifier workers; use as a context manager to keep them warm.

        with VerifierPool(timeout_s=10) as pool:          # once per training run
            verdicts = pool.verify_batch([(completion, reference, "math"), ...])

    One caller thread at a time (the trainer's reward call); it is not thread-safe.

    timeout_s: wall-clock limit per item, measured from when the item starts on a worker.
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
        self._workers: list[WorkerProcess] = []
        self.restarts = 0
        self._start_failures = 0
        self.costs: dict[str, float] = {}  # measured seconds per item, by verifier name
        self.chunks_sent = 0
        self._fixed_chunk: int | None = None

    def __enter__(self) -> VerifierPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        while len(self._workers) < self.size:
            self._workers.append(WorkerProcess(self._config))

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
        batch = self._batch_of(items)
        self.start()
        self._run(batch, timeout_s, reasoning)
        return [v if v is not None else Verdict.error("pool lost the item") for v in batch.results]

    def warm(self, items: Sequence[Item], *, reasoning: ReasoningFormat | None = None) -> None:
        """Grade ``items`` once on every worker, answers discarded, so lazy imports and loaded
        data (sympy, langdetect's profiles) are paid before the first batch that counts."""
        batch = self._batch_of(list(items) * self.size)
        self.start()
        while not all(w.ready for w in self._workers):
            self._collect(batch)
        self._fixed_chunk = len(items)  # each idle worker takes one whole copy
        try:
            self._run(batch, None, reasoning)
        finally:
            self._fixed_chunk = None

    def _batch_of(self, items: Sequence[Item]) -> _Batch:
        batch = _Batch([None] * len(items))
        pickled: dict[int, tuple[Any, bytes | Verdict]] = {}  # id -> (object kept alive, bytes)
        for i, (completion, reference, verifier) in enumerate(items):
            ref = verifier if isinstance(verifier, str) else pickled_verifier(verifier, pickled)
            if isinstance(ref, Verdict):
                batch.results[i] = ref
            else:
                if type(reference) is not dict:  # a plain dict pickles as is: no copy
                    reference = dict(reference)
                batch.pending.append((i, completion, reference, ref, cost_key(verifier)))
        return batch

    def _run(self, batch: _Batch, timeout_s: float | None, fmt: ReasoningFormat | None) -> None:
        limit = self.timeout_s if timeout_s is None else timeout_s
        fmt = self.reasoning if fmt is None else fmt
        while batch.pending or any(w.busy for w in self._workers):
            self._dispatch(batch, limit, fmt)
            self._collect(batch)

    def _chunk_size(self, pending: deque[Entry]) -> int:
        """Items whose measured cost adds up to ``CHUNK_SECONDS``, and no more than a fair
        share of what is left, so every worker gets work until the end of the batch; but
        never less work than ``MIN_CHUNK_SECONDS``, where round trips would dominate."""
        if self._fixed_chunk:
            return self._fixed_chunk
        fair = math.ceil(len(pending) / (CHUNKS_PER_WORKER * len(self._workers)))
        spent, size = 0.0, 0
        for entry in islice(pending, None):
            if spent >= CHUNK_SECONDS or (size >= fair and spent >= MIN_CHUNK_SECONDS):
                break
            size += 1
            spent += self.costs.get(entry[4], UNKNOWN_COST_S)
        return max(1, size)

    def _dispatch(self, batch: _Batch, limit: float, fmt: ReasoningFormat) -> None:
        for slot, worker in enumerate(self._workers):
            if not (batch.pending and worker.ready and worker.has_room):
                continue
            size = self._chunk_size(batch.pending)
            chunk = [batch.pending.popleft() for _ in range(size)]
            chunk, message = encode_chunk(chunk, fmt, batch.results)
            if not chunk:
                continue
            try:
                worker.submit(chunk, message, limit)
                self.chunks_sent += 1
            except OSError:  # died: replace it and retry what it held and this chunk
                batch.requeue(worker.inflight + chunk)
                self._replace(slot)

    def _collect(self, batch: _Batch) -> None:
        now = time.monotonic()
        waits = [w.deadline() - now for w in self._workers if w.busy] + [1.0]
        ready = wait([w.inbox for w in self._workers], timeout=max(0.0, min(waits)))
        for slot, worker in enumerate(list(self._workers)):
            if worker.inbox in ready:
                self._receive(slot, worker, batch)
            elif worker.busy and time.monotonic() >= worker.deadline():
                self._overran(slot, batch)
            elif not worker.ready and time.monotonic() - worker.started > START_TIMEOUT_S:
                log.error("verifier worker did not start within %.0f s", START_TIMEOUT_S)
                self._replace(slot)

    def _overran(self, slot: int, batch: _Batch) -> None:
        """The running item gets a ``timeout``; the rest of its chunk (the items it had
        finished, whose answers die with it, too) goes back in the queue."""
        worker = self._workers[slot]
        position, _ = worker.running()
        chunk = worker.inflight
        batch.results[chunk[position][0]] = Verdict.timeout(f"exceeded {worker.limit:g} s per item")
        batch.requeue(chunk[:position] + chunk[position + 1 :])
        self._replace(slot)

    def _died(self, slot: int, batch: _Batch, code: int | None) -> None:
        """A worker died mid-item: the item goes to a fresh worker, up to the attempt limit."""
        worker = self._workers[slot]
        position, _ = worker.running()
        chunk = worker.inflight
        if position < len(chunk):
            index = chunk[position][0]
            batch.deaths[index] += 1
            n = batch.deaths[index]
            log.warning("verifier worker died (exit code %s) on item %d, death %d", code, index, n)
            if n >= MAX_ITEM_ATTEMPTS:
                lost = f"verifier worker died on this item {n} times (last exit code {code})"
                batch.results[index] = Verdict.error(lost)
                chunk = chunk[:position] + chunk[position + 1 :]
        batch.requeue(chunk)
        self._replace(slot)

    def _receive(self, slot: int, worker: WorkerProcess, batch: _Batch) -> None:
        try:
            message = worker.inbox.recv()
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
                        f"run `{sys.executable} -m verifiers.pool.worker` to see why"
                    ) from None
            self._replace(slot)
            return
        if message[0] == READY:
            worker.ready = True
            self._start_failures = 0
            return
        answers, seconds = message
        chunk = worker.take_answered()
        self._learn(chunk, seconds)
        for entry, answer in zip(chunk, answers, strict=True):
            batch.results[entry[0]] = verdict_from_answer(answer, batch.verdicts)

    def _learn(self, chunk: list[Entry], seconds: list[float]) -> None:
        """Per-item cost by verifier, a running mean weighted towards the newest chunk."""
        totals: dict[str, list[float]] = {}
        for entry, spent in zip(chunk, seconds, strict=True):
            total = totals.setdefault(entry[4], [0.0, 0.0])
            total[0] += spent
            total[1] += 1
        for key, (spent, n) in totals.items():
            old = self.costs.get(key)
            self.costs[key] = spent / n if old is None else 0.5 * old + 0.5 * spent / n

    def _replace(self, slot: int) -> None:
        self._workers[slot].kill()
        self._workers[slot] = WorkerProcess(self._config)
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
