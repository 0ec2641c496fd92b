"""Worker process of ``verifiers.pool.pool``: grade chunks of items, answer each chunk at once.

Started as ``python -m verifiers.pool.worker READ_FD WRITE_FD PROGRESS_FD`` in its own
session, so the pool can kill it (and anything it started) with one ``killpg`` when an item
overruns. A chunk arrives as one message and its verdicts leave as one message, with the
seconds each item took so the pool can size the next chunks; after every item the worker
marks its progress cell (``verifiers.pool.progress``), which is how the pool knows which
item of a chunk is running and when it started.

Fault injection for end-to-end tests of the infrastructure-error path, off unless set:
``RLVR_VERIFIER_POOL_FAULT=<verifier>:<n>`` makes the worker SIGKILL itself on every item of
a batch whose verifier is ``<verifier>`` and whose batch index is a multiple of ``n``, on
every attempt, as a poisonous input would.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from verifiers.pool.progress import ProgressCell
from verifiers.verdict import Status, Verdict, clip

READY = "ready"
FAULT_ENV = "RLVR_VERIFIER_POOL_FAULT"
STOP = b""


def _fault() -> tuple[str, int] | None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return None
    name, _, every = spec.rpartition(":")
    if not name or not every.isdigit() or int(every) < 1:
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected <verifier>:<n> with n >= 1")
    return name, int(every)


def _limit_memory(megabytes: int | None) -> None:
    if megabytes:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class _Grader:
    """Verifiers built by name and unpickled objects, each kept for the worker's lifetime."""

    def __init__(self, options: dict[str, dict[str, Any]]) -> None:
        from verifiers.api import verify
        from verifiers.registry import get_verifier

        self.get_verifier = get_verifier
        self.verify = verify  # bound once: an import per item costs a tenth of a cheap check
        self.options = options
        self.by_name: dict[str, Any] = {}
        self.by_payload: dict[bytes, Any] = {}
        self.fault = _fault()
        self.loaded = False  # a verifier was built since the last chunk

    def verifier(self, ref: str | bytes) -> Any:
        """The verifier an item names; raises when it cannot be built or unpickled."""
        if isinstance(ref, str):
            if ref not in self.by_name:
                self.by_name[ref] = self.get_verifier(ref, **self.options.get(ref, {}))
                self.loaded = True
            return self.by_name[ref]
        if ref not in self.by_payload:
            self.by_payload[ref] = pickle.loads(ref)
            self.loaded = True
        return self.by_payload[ref]

    def grade(self, index: int, completion: Any, reference: Any, ref: str | bytes, fmt: Any):
        try:
            verifier = self.verifier(ref)
        except Exception as exc:  # unknown name, unimportable class: an infrastructure error
            return Verdict.error(clip(f"pool worker could not load the item: {exc!r}"))
        name = getattr(verifier, "name", None)
        if self.fault and name == self.fault[0] and index % self.fault[1] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        verdict = self.verify(completion, reference, verifier, fmt)
        if verdict.status is Status.ERROR and "MemoryError" in verdict.details:
            # the answer made the grader exhaust its memory budget: a resource limit hit by
            # the model's output, like a timeout, not a verifier failure
            return Verdict.timeout("memory limit exceeded while grading")
        return verdict


def _serve(inbox: Connection, outbox: Connection, cell: ProgressCell, grader: _Grader) -> None:
    done = 0
    outbox.send((READY, os.getpid()))
    while True:
        message = inbox.recv_bytes()
        if message == STOP:
            return
        fmt, payloads, entries = pickle.loads(message)
        answers, seconds = [], []
        same: dict[tuple, tuple] = {}  # equal answers sent as one object (pickle's memo)
        for index, completion, reference, ref in entries:
            start = time.monotonic()
            verdict = grader.grade(index, completion, reference, payloads[ref] if isinstance(ref, int) else ref, fmt)
            end = time.monotonic()
            seconds.append(end - start)
            answer = (verdict.score, verdict.status.value, verdict.extracted, verdict.details)
            answers.append(same.setdefault(answer, answer))
            done += 1
            cell.finished(done, end)
        outbox.send((answers, seconds))
        if grader.loaded:  # a verifier's modules and tables are in: stop the GC walking them
            grader.loaded = False
            gc.freeze()


def main(argv: list[str]) -> None:
    inbox = Connection(int(argv[1]), writable=False)
    outbox = Connection(int(argv[2]), readable=False)
    cell = ProgressCell(int(argv[3]))
    config = inbox.recv()
    sys.path[:0] = [p for p in config["sys_path"] if p not in sys.path]
    _limit_memory(config.get("memory_limit_mb"))
    try:
        _serve(inbox, outbox, cell, _Grader(config.get("options") or {}))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the pool went away; exit quietly


if __name__ == "__main__":
    main(sys.argv)
