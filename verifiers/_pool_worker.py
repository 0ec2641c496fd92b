"""Worker process of ``verifiers.pool``: receive items on a pipe, answer with verdicts.

Started as ``python -m verifiers._pool_worker READ_FD WRITE_FD`` in its own session, so the
pool can kill it (and anything it started) with one ``killpg`` when an item overruns.

Fault injection for end-to-end tests of the infrastructure-error path, off unless set:
``RLVR_VERIFIER_POOL_FAULT=<verifier>:<n>`` makes the worker SIGKILL itself on every item of
a batch whose verifier is ``<verifier>`` and whose batch index is a multiple of ``n``, on
every attempt, as a poisonous input would.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any

READY = "ready"
FAULT_ENV = "RLVR_VERIFIER_POOL_FAULT"


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


def _serve(inbox: Connection, outbox: Connection, options: dict[str, dict[str, Any]]) -> None:
    from verifiers.api import verify
    from verifiers.registry import get_verifier
    from verifiers.verdict import Status, Verdict, clip

    cache: dict[str, Any] = {}
    fault = _fault()

    def grade(index: int, payload: bytes) -> Verdict:
        try:
            completion, reference, verifier, reasoning = pickle.loads(payload)
            if isinstance(verifier, str):
                if verifier not in cache:
                    cache[verifier] = get_verifier(verifier, **options.get(verifier, {}))
                verifier = cache[verifier]
        except Exception as exc:  # bad item (unknown name, unimportable class): infra error
            return Verdict.error(clip(f"pool worker could not load the item: {exc!r}"))
        if fault and getattr(verifier, "name", None) == fault[0] and index % fault[1] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        verdict = verify(completion, reference, verifier, reasoning)
        if verdict.status is Status.ERROR and "MemoryError" in verdict.details:
            # the answer made the grader exhaust its memory budget: a resource limit hit by
            # the model's output, like a timeout, not a verifier failure
            return Verdict.timeout("memory limit exceeded while grading")
        return verdict

    outbox.send((READY, os.getpid()))
    while True:
        message = inbox.recv()
        if message is None:
            return
        for index, payload in message:  # a chunk; one reply per item, in order
            outbox.send((index, grade(index, payload)))


def main(argv: list[str]) -> None:
    inbox = Connection(int(argv[1]), writable=False)
    outbox = Connection(int(argv[2]), readable=False)
    config = inbox.recv()
    sys.path[:0] = [p for p in config["sys_path"] if p not in sys.path]
    _limit_memory(config.get("memory_limit_mb"))
    try:
        _serve(inbox, outbox, config.get("options") or {})
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the pool went away; exit quietly


if __name__ == "__main__":
    main(sys.argv)
