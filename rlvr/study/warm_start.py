"""The driver's side of warm stage start: forks stages through the stage server, or says no.

A stage whose command is not ``python -m`` (``accelerate launch``), or whose environment
differs from its server's (libraries read variables at import; each thread setting has its
own server), starts cold as before, as does every stage once the server is not usable (it did not
start, or died: the stages it held died with it and are reported failed, so a rerun runs
them). The server itself is ``rlvr/study/forkserver.py``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Sequence

from rlvr.study.stage_process import die_with_parent

THREAD_KEYS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # read by OpenMP and MKL at start-up


class WarmProcess:
    """A stage forked by the server: what the launcher reads of a ``subprocess.Popen``."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.returncode: int | None = None
        self.cpu_s: float | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.server.pump()
            self._take()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"stage process {self.pid} still running")
            self.server.pump(0.1)
        return self.returncode  # type: ignore[return-value]

    def _take(self) -> None:
        ended = self.server.ended.pop(self.pid, None)
        if ended is not None:
            self.returncode, self.cpu_s = ended
        elif self.server.broken:  # the server died, and its children with it (PDEATHSIG)
            self.returncode = -signal.SIGKILL


class WarmStart:
    """One stage server per thread setting (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``), each
    started with its stages' environment: OpenMP and MKL read those at start-up, and setting
    threads later (``torch.set_num_threads`` also turns MKL's dynamic threading off) changes
    how multi-threaded kernels split their sums, so a forked stage would not compute bit for
    bit what a fresh one does. At most ``MAX_SERVERS``; other settings start cold."""

    MAX_SERVERS = 2

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.servers: dict[tuple[str | None, ...], ForkServer] = {}

    def start(self, argv: list[str], env: dict[str, str], cwd: str, log: str) -> WarmProcess | None:
        server = self._server(env)
        return None if server is None else server.start(argv, env, cwd, log)

    def prepare(self, commands: Sequence[tuple[list[str], dict[str, str]]]) -> None:
        """Start, without waiting, the servers the stages to come (``argv``, ``env``; in the
        order they will likely start) will fork from: each imports while the driver and the
        first stage's server do, not later on the study's critical path (the one-thread
        server would otherwise start only when the two-thread SFT ends)."""
        for argv, env in commands:
            server = self._server(env) if _module_of(argv) is not None else None
            if server is not None:
                server.spawn(env)

    def _server(self, env: dict[str, str]) -> ForkServer | None:
        key = tuple(env.get(k) for k in THREAD_KEYS)
        server = self.servers.get(key)
        if server is None:
            if len(self.servers) >= self.MAX_SERVERS:
                return None
            name = "forkserver" if key[0] is None else f"forkserver-threads{key[0]}"
            server = self.servers[key] = ForkServer(os.path.join(self.log_dir, f"{name}.log"))
        return server

    def close(self) -> None:
        for server in self.servers.values():
            server.close()


class ForkServer:
    """One server: started on first use with that stage's environment, it forks the stages
    whose environment is the same, and says ``None`` for others (the launcher starts those
    cold, as before)."""

    READY_TIMEOUT_S = 300.0

    def __init__(self, log: str) -> None:
        self.log = log
        self.env: dict[str, str] = {}  # the server's, taken when it starts
        self.ended: dict[int, tuple[int, float]] = {}  # pid -> (returncode, CPU seconds)
        self.broken: str | None = None  # why the server cannot fork stages
        self._proc = None
        self._ready = False
        self._buffer = b""
        self._started: dict[int, int] = {}  # request id -> pid
        self._next = 0

    def start(self, argv: list[str], env: dict[str, str], cwd: str, log: str) -> WarmProcess | None:
        module = _module_of(argv)
        if module is None or not self._up(env) or env != self.env:
            return None
        self._next += 1
        request = {"id": self._next, "module": module, "args": argv[3:], "env": env, "cwd": cwd, "log": log}
        try:
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as err:
            self._break(f"server gone ({err})")
            return None
        deadline = time.monotonic() + 30
        while self._next not in self._started and not self.broken:
            if time.monotonic() > deadline:
                self._break("no answer to a start request in 30 s")
            self.pump(0.1)
        pid = self._started.pop(self._next, None)
        return None if pid is None else WarmProcess(self, pid)

    def fileno(self) -> int | None:
        """The pipe the server reports on (readable when a stage has ended), if it is up."""
        if self._proc is None or self.broken:
            return None
        return self._proc.stdout.fileno()

    def pump(self, timeout: float = 0.0) -> None:
        """Read what the server said (started and ended stages), waiting up to ``timeout``."""
        if self._proc is None or self.broken:
            return
        out = self._proc.stdout
        readable, _, _ = select.select([out], [], [], timeout)
        if not readable:
            return
        chunk = os.read(out.fileno(), 65536)
        if not chunk:
            self._break(f"server exited ({self._proc.wait()}); see {self.log}")
            return
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "ready" in message:
                self._ready = bool(message["ready"])
                if not self._ready:
                    self._break(f"{message['threads']} threads after imports: fork unsafe")
            elif "returncode" in message:
                self.ended[message["pid"]] = (message["returncode"], message["cpu_s"])
            else:
                self._started[message["id"]] = message["pid"]

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()  # the server leaves its loop
            try:
                self._proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                self._proc.kill()
                self._proc.wait()

    def _up(self, env: dict[str, str]) -> bool:
        """The server started (with ``env`` if it starts now) and done importing; the first
        stage waits for it."""
        if self.broken:
            return False
        self.spawn(env)
        deadline = time.monotonic() + self.READY_TIMEOUT_S
        while not self._ready and not self.broken and time.monotonic() < deadline:
            self.pump(0.2)
        if not self._ready and not self.broken:
            self._break(f"not ready after {self.READY_TIMEOUT_S:.0f} s")
        return self._ready and not self.broken

    def spawn(self, env: dict[str, str]) -> None:
        """Start the server process with ``env`` unless it runs (or could not run) already."""
        if self._proc is not None or self.broken:
            return
        import subprocess

        self.env = dict(env)
        os.makedirs(os.path.dirname(self.log) or ".", exist_ok=True)
        with open(self.log, "a") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "rlvr.study.forkserver"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=self.env,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def _break(self, why: str) -> None:
        import logging

        if not self.broken:
            logging.getLogger(__name__).warning("warm stage start off: %s; stages start cold", why)
        self.broken = why
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()  # its stages die with it (PDEATHSIG), as they are reported
            self._proc.wait()


def _module_of(argv: list[str]) -> str | None:
    """The entry module of ``python -m <module> ...``; None for any other command."""
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
        return None if argv[2].startswith("accelerate") else argv[2]
    return None
