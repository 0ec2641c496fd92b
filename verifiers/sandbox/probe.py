"""Probe each backend for real (start a jail, run a tiny program) and pick one by name."""

from __future__ import annotations

import functools
import logging

from verifiers.sandbox.backends import BACKEND_NAMES, BACKENDS, Backend
from verifiers.sandbox.limits import OK, Limits
from verifiers.sandbox.pool import Worker, WorkerDied

log = logging.getLogger(__name__)

SELECTIONS: tuple[str, ...] = ("auto", *BACKEND_NAMES)
_PROBE_SOURCE = "import os\nprint(6 * 7, os.getcwd().startswith('/'))"
_PROBE_LIMITS = Limits(cpu_s=5, wall_s=10)


class SandboxUnavailableError(RuntimeError):
    """The requested sandbox cannot run here; the message lists what can."""


@functools.cache
def probe(name: str) -> str | None:
    """None when backend ``name`` works on this machine, else the reason it does not."""
    backend = _backend(name)
    try:
        worker = Worker(backend, index=0)
    except (WorkerDied, OSError, RuntimeError) as exc:
        return str(exc)
    try:
        reply = worker.run({"source": _PROBE_SOURCE, "stdin": "", "limits": _PROBE_LIMITS.to_dict()}, timeout_s=15)
    except WorkerDied as exc:
        return f"probe execution failed: {exc}"
    finally:
        worker.stop()
    if reply.get("status") != OK or reply.get("stdout", "").strip() != "42 True":
        return f"probe program misbehaved: {str(reply)[:300]}"
    return None


def available_backends() -> dict[str, str | None]:
    """Every backend name -> None if it works here, else why not (probes all of them)."""
    return {b.name: probe(b.name) for b in BACKENDS}


def _backend(name: str) -> Backend:
    for backend in BACKENDS:
        if backend.name == name:
            return backend
    raise SandboxUnavailableError(f"unknown sandbox backend {name!r}; valid choices: {', '.join(SELECTIONS)}")


@functools.cache
def select_backend(selection: str = "auto") -> Backend:
    """Resolve ``auto|nsjail|bwrap|unshare|rlimit`` to a working backend; log the level once."""
    if selection != "auto":
        backend = _backend(selection)
        reason = probe(selection)
        if reason is not None:
            working = [n for n in BACKEND_NAMES if probe(n) is None]
            raise SandboxUnavailableError(
                f"sandbox backend {selection!r} is unavailable here: {reason}. "
                f"Available: {', '.join(working) or 'none'}"
            )
        log.info("sandbox: %s (%s)", backend.name, backend.isolation)
        return backend
    skipped: list[tuple[str, str]] = []
    for backend in BACKENDS:  # strongest first
        reason = probe(backend.name)
        if reason is None:
            for name, why in skipped:
                log.info("sandbox: skipped %s: %s", name, why)
            log.info("sandbox: %s (%s)", backend.name, backend.isolation)
            if backend.name == "rlimit":
                log.warning(
                    "sandbox: rlimit only; untrusted code is NOT network-isolated by "
                    "namespaces (seccomp denies sockets instead)"
                )
            return backend
        skipped.append((backend.name, reason))
    raise SandboxUnavailableError("no sandbox backend works here: " + "; ".join(f"{n}: {r}" for n, r in skipped))
