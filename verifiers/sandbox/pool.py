"""A pool of long-lived sandboxed fork-server workers, restarted when one dies."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import queue
import select
import shutil
import signal
import struct
import subprocess
import threading
import time

from verifiers.sandbox import uid_slots
from verifiers.sandbox.backends import Backend, Launch, can_drop_uid
from verifiers.sandbox.forkserver import MAX_FRAME, write_frame
from verifiers.sandbox.limits import CRASHED, INFRA_ERROR, ExecResult, Limits

log = logging.getLogger(__name__)

START_TIMEOUT_S = 20.0
REPLY_GRACE_S = 5.0  # the server enforces wall_s itself; this only catches a wedged server
MAX_WORKERS = 8


@functools.lru_cache(maxsize=16)
def prelude_key(prelude: tuple[tuple[str, str], ...]) -> str:
    """A prelude's identity on the wire (computed once per prelude)."""
    digest = hashlib.sha256()
    for name, source in prelude:
        digest.update(f"{len(name)}:{name}{len(source)}:".encode() + source.encode())
    return digest.hexdigest()


class WorkerDied(RuntimeError):
    """The worker stopped answering (killed, crashed, or wedged); the message says how."""


def default_workers() -> int:
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


class Worker:
    """One jail running one fork server; requests are served strictly one at a time."""

    def __init__(self, backend: Backend, index: int) -> None:
        self.backend, self.index = backend, index
        self._proc: subprocess.Popen[bytes] | None = None
        self._launch: Launch | None = None
        self._slot: uid_slots.UidSlot | None = None
        self.start()

    def start(self) -> None:
        self._preludes: set[str] = set()  # prelude keys this server has run
        # As root the code runs as a spare uid: lease one no other worker on the host uses.
        self._slot = uid_slots.lease() if can_drop_uid() else None
        try:
            self._launch = launch = self.backend.launch(self._slot.number if self._slot else 0)
            self._proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=launch.env,
                start_new_session=True,  # its own process group: one killpg ends the jail
                user=launch.user,
                group=launch.user,
                extra_groups=[] if launch.user is not None else None,
                cwd="/",
            )
        except BaseException:
            self.stop()  # frees the slot
            raise
        try:
            hello = self._read_reply(START_TIMEOUT_S)
        except WorkerDied as exc:
            err = self._drain_stderr()
            self.stop()
            raise WorkerDied(f"{self.backend.name} worker did not start: {exc}; {err}") from None
        if not hello.get("ready"):
            self.stop()
            raise WorkerDied(f"{self.backend.name} worker sent {hello!r} instead of ready")
        assert self._proc.stderr is not None  # Popen(stderr=PIPE) above always sets it
        self._proc.stderr.close()  # only start-up errors are interesting; never let it fill

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def run(
        self,
        request: dict,
        timeout_s: float,
        secret: bytes = b"",
        prelude: tuple[tuple[str, str], ...] = (),
    ) -> dict:
        """One execution; ``secret`` (announced by ``request["secret_bytes"]``) follows the frame;
        ``prelude`` travels only the first time this server sees it (then by its key)."""
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        key = prelude_key(prelude) if prelude else None
        if key is not None:
            request = dict(request, prelude_key=key)
            if key not in self._preludes:
                request["prelude"] = [list(part) for part in prelude]
        try:
            write_frame(fd, request)
            view = memoryview(secret)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise WorkerDied(f"request not delivered: {exc}") from None
        reply = self._read_reply(timeout_s)
        if key is not None and reply.get("status") != "server_error":
            self._preludes.add(key)
        return reply

    def _read_reply(self, timeout_s: float) -> dict:
        import json

        deadline = time.monotonic() + timeout_s
        header = self._read_exact(4, deadline)
        (size,) = struct.unpack(">I", header)
        if size > MAX_FRAME:
            raise WorkerDied(f"reply frame of {size} bytes")
        return json.loads(self._read_exact(size, deadline))

    def _read_exact(self, n: int, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd, chunks, got = self._proc.stdout.fileno(), [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WorkerDied("no reply before the deadline")
            chunk = os.read(fd, n - got)
            if not chunk:
                raise WorkerDied(f"worker exited (status {self._proc.poll()})")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _drain_stderr(self) -> str:
        if self._proc is None or self._proc.stderr is None or self._proc.stderr.closed:
            return ""
        if self._proc.poll() is None:
            return "(still running)"
        return self._proc.stderr.read(2000).decode(errors="replace").strip()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        if self._launch is not None and self._launch.host_tmp:
            shutil.rmtree(self._launch.host_tmp, ignore_errors=True)
        if self._slot is not None:  # only now: the jail and its code are gone
            self._slot.release()
            self._slot = None

    def restart(self) -> None:
        self.stop()
        self.start()


class WorkerPool:
    """Thread-safe: each ``run`` borrows an idle worker, so parallelism = number of workers."""

    def __init__(self, backend: Backend, workers: int = 0) -> None:
        self.backend = backend
        self.size = min(MAX_WORKERS, workers) if workers > 0 else default_workers()
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all = [Worker(backend, i) for i in range(self.size)]
        for worker in self._all:
            self._idle.put(worker)
        self._closed = False
        self._lock = threading.Lock()

    def run(
        self,
        source: str,
        stdin: str = "",
        limits: Limits = Limits(),
        *,
        secret: bytes = b"",
        prelude: tuple[tuple[str, str], ...] = (),
    ) -> ExecResult:
        request: dict[str, object] = {"source": source, "stdin": stdin, "limits": limits.to_dict()}
        if secret:
            request["secret_bytes"] = len(secret)
        timeout = limits.wall_s + REPLY_GRACE_S
        worker = self._idle.get()
        try:
            if not worker.alive and not self._restart(worker):
                return ExecResult(INFRA_ERROR, details=f"{self.backend.name} worker cannot start")
            for attempt in (1, 2):  # a second death on the same code is the code's doing
                try:
                    return ExecResult.from_reply(worker.run(request, timeout, secret, prelude))
                except WorkerDied as exc:
                    log.warning("%s worker %d died (%s); restarting", self.backend.name, worker.index, exc)
                    if not self._restart(worker):
                        return ExecResult(INFRA_ERROR, details=f"sandbox worker lost: {exc}")
                    if attempt == 2:
                        return ExecResult(CRASHED, details=f"the code killed its sandbox worker ({exc})")
            raise AssertionError("unreachable")
        finally:
            self._idle.put(worker)

    def _restart(self, worker: Worker) -> bool:
        try:
            worker.restart()
            return True
        except (WorkerDied, OSError) as exc:
            log.error("%s worker %d cannot restart: %s", self.backend.name, worker.index, exc)
            return False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for worker in self._all:
            worker.stop()
