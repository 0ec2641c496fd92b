"""Warm fork server run inside a sandbox: forks one fresh, limited child per execution request.

Stdlib only (it starts inside the jail as ``python -E -s -B forkserver.py CONFIG_JSON``).
Requests and replies are length-prefixed JSON frames on stdin/stdout. Each child starts a new
session, drops to the configured uid, sets rlimits, installs the seccomp filter, enters a fresh
private temp dir and runs the source in-process (no new interpreter: a fork costs ~2.5 ms).
After the child exits, every process it left behind is killed and its temp dir removed.

A request may carry a prelude (``prelude_key``, and the first time ``prelude``:
``[[filename, source], ...]``, trusted library code the server runs once; the source then
runs in the child's copy of its namespace) and a secret:
``secret_bytes`` raw bytes following the frame, moved with ``splice`` into an anonymous
memfd that the child finds on fd 4 (``SECRET_FD``). The server never reads the secret into
its own memory, so no later child (forked from it) can find an earlier run's secret in its
heap. The server is not dumpable: same-uid code cannot open ``/proc/<server>/fd/*``.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback

# Warm the modules test code imports most, so each forked child finds them loaded.
import bisect, collections, functools, heapq, itertools, math, re, string, typing  # noqa: E401,F401,I001  isort: skip

if __name__ == "__main__":  # run as a script inside the jail: the sibling module is top-level
    import seccomp_filter
else:
    from verifiers.sandbox import seccomp_filter

MAX_FRAME = 256 << 20
RESULT_FD = 3  # the child's structured-result channel (separate from stdout)
SECRET_FD = 4  # the request's secret bytes (a memfd), when it has any
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_CHILD_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


def write_frame(fd: int, obj: object) -> None:
    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict:
    (size,) = struct.unpack(">I", _read_exact(fd, 4))
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    return json.loads(_read_exact(fd, size))


_LIBC: list = []  # the C library, loaded once by the server (children inherit it)


def _prctl(option: int, value: int) -> None:
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None))
    _LIBC[0].prctl(option, value, 0, 0, 0)


def _set_limits(lim: dict) -> None:
    mb = 1 << 20
    cpu = max(1, int(lim["cpu_s"] + 0.999))
    settings = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, lim["memory_mb"] * mb, lim["memory_mb"] * mb),
        (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb, lim["fsize_mb"] * mb),
        (resource.RLIMIT_NPROC, lim["nproc"], lim["nproc"]),
        (resource.RLIMIT_NOFILE, lim["nofile"], lim["nofile"]),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    for which, soft, hard in settings:
        resource.setrlimit(which, (soft, hard))


def _drop_privileges(uid: int | None) -> None:
    if uid is None or os.geteuid() != 0:
        return
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _child(cfg: dict, req: dict, tmp: str, fds: tuple[int, int, int], secret: int | None) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setsid()
        _stdin(req.get("stdin", "").encode("utf-8", "surrogatepass"))
        if secret is not None:
            os.dup2(secret, SECRET_FD)
        for target, fd in zip((1, 2, RESULT_FD), fds, strict=True):
            os.dup2(fd, target)
        os.closerange(RESULT_FD + 1 if secret is None else SECRET_FD + 1, 1 << 16)
        _drop_privileges(cfg.get("child_uid"))
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
        _prctl(_PR_SET_DUMPABLE, 0)  # whatever fs.suid_dumpable says: no /proc/<pid>/{fd,mem}
        _set_limits(req["limits"])
        if cfg.get("seccomp") and seccomp_filter.supported():
            seccomp_filter.install(allow_unix_sockets=cfg.get("allow_unix_sockets", True))
        os.chdir(tmp)
        os.environ.clear()
        os.environ.update(_CHILD_ENV, HOME=tmp, TMPDIR=tmp)
        tempfile.tempdir = tmp
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.argv = ["solution.py"]
        sys.path[0] = tmp
        code = _run_source(req["source"], _prelude(req))
    except BaseException:  # setup failure: report it on stderr, exit non-zero
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


_PRELUDES: dict[tuple, dict] = {}


def _fresh_namespace() -> dict:
    return {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "solution.py"}


def _prelude(req: dict) -> dict | None:
    """The namespace the request's prelude leaves, run once per server: children inherit it
    ready-made (compiling and defining its functions costs more than a fork). The pool sends
    the prelude's parts the first time, then only its ``prelude_key``. None: no prelude."""
    key, parts = req.get("prelude_key"), req.get("prelude")
    if key is None:
        return None
    if key not in _PRELUDES:
        if not parts:
            raise KeyError(f"prelude {key} was never sent to this server")
        namespace = _fresh_namespace()
        for name, source in parts:
            exec(compile(source, name, "exec"), namespace)  # noqa: S102  trusted library code
        _PRELUDES[key] = namespace
    return _PRELUDES[key]


def _stdin(data: bytes) -> None:
    """fd 0: a memfd holding ``data`` (a regular, seekable file; nothing on disk)."""
    fd = os.memfd_create("stdin", 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)


def _run_source(source: str, prelude: dict | None) -> int:
    namespace = _fresh_namespace() if prelude is None else prelude  # ours alone: we are a fork
    try:
        exec(compile(source, "solution.py", "exec"), namespace)  # noqa: S102  the point of a sandbox
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _collect(pid: int, fds: dict[int, str], lim: dict) -> tuple[str, dict[str, bytearray], tuple]:
    """Read the child's pipes until EOF, the wall-clock deadline or the output cap."""
    bufs = {name: bytearray() for name in fds.values()}
    deadline, cap, status = time.monotonic() + lim["wall_s"], lim["output_bytes"], "ok"
    open_fds = set(fds)
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            status = "timeout"
            break
        ready, _, _ = select.select(list(open_fds), [], [], min(left, 0.05))
        if not ready:
            done = os.wait4(pid, os.WNOHANG)
            if done[0] == pid:  # exited, but a leftover process holds a pipe: stop reading
                return status, bufs, done
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            bufs[fds[fd]] += chunk
        if sum(len(b) for b in bufs.values()) > cap:
            status = "output_limit"
            break
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    return status, bufs, os.wait4(pid, 0)


def _exit_info(done: tuple) -> tuple[int | None, int | None, float]:
    _, st, ru = done
    cpu = ru.ru_utime + ru.ru_stime
    if os.WIFSIGNALED(st):
        return None, os.WTERMSIG(st), cpu
    return os.WEXITSTATUS(st), None, cpu


def _sweep(cfg: dict, pgid: int) -> None:
    """Kill everything the execution left behind (daemons, setsid escapees), reap zombies."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    if cfg.get("pid_namespace"):
        try:
            os.kill(-1, signal.SIGKILL)  # inside our own PID namespace: everything but us and init
        except OSError:
            pass
    elif cfg.get("child_uid") is not None and os.geteuid() == 0:
        reaper = os.fork()
        if reaper == 0:  # a process of the child's uid may signal exactly that uid's processes
            try:
                _drop_privileges(cfg["child_uid"])
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(reaper, 0)
    else:
        _kill_orphans()
    _reap()


def _kill_orphans() -> None:
    """Without a PID namespace or a spare uid: orphans re-parent to us (subreaper); kill them."""
    for _ in range(8):  # each pass kills one generation; the next one re-parents to us
        if not _kill_children_once():
            return
        time.sleep(0.001)


def _kill_children_once() -> int:
    me, killed = str(os.getpid()), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        if ppid == me:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    _reap()
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def execute(cfg: dict, req: dict, secret: int | None = None) -> dict:
    """Fork, run, collect, clean up; the reply describes what happened."""
    _prelude(req)  # run here, once: a broken prelude is a server error
    tmp = tempfile.mkdtemp(prefix="run-", dir=cfg["tmp_root"])
    if cfg.get("child_uid") is not None and os.geteuid() == 0:
        os.chown(tmp, cfg["child_uid"], cfg["child_uid"])
    pipes = [os.pipe() for _ in range(3)]
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for r, _ in pipes:
            os.close(r)
        _child(cfg, req, tmp, (pipes[0][1], pipes[1][1], pipes[2][1]), secret)
    for _, w in pipes:
        os.close(w)
    fds = dict(zip((r for r, _ in pipes), ("stdout", "stderr", "results"), strict=True))
    status, bufs, done = _collect(pid, fds, req["limits"])
    exit_code, sig, cpu = _exit_info(done)
    wall = time.monotonic() - start
    for fd in fds:
        os.close(fd)
    _sweep(cfg, pid)
    _remove_tree(tmp)
    out = {k: v.decode("utf-8", errors="replace") for k, v in bufs.items()}
    return {"status": status, "exit_code": exit_code, "signal": sig, "wall_s": wall, "cpu_s": cpu, **out}


def _remove_tree(path: str) -> None:
    def unlock(func, p, _exc):  # the child may have chmod-ed its own files read-only
        os.chmod(os.path.dirname(p), 0o700)
        os.chmod(p, 0o700) if os.path.isdir(p) else None
        func(p)

    shutil.rmtree(path, onerror=unlock)


def take_secret(fd: int, size: int) -> int | None:
    """Move ``size`` bytes from the request pipe into a fresh memfd, never through our memory."""
    if not size:
        return None
    memfd = os.memfd_create("secret", os.MFD_CLOEXEC)
    moved = 0
    while moved < size:
        n = os.splice(fd, memfd, size - moved)  # pipe to file, inside the kernel
        if n == 0:
            os.close(memfd)
            raise EOFError("pipe closed")
        moved += n
    return memfd


def serve(cfg: dict) -> None:
    req_fd, reply_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    _prctl(_PR_SET_DUMPABLE, 0)
    if cfg.get("seccomp") and seccomp_filter.supported():
        seccomp_filter.prepare(cfg.get("allow_unix_sockets", True))
    if cfg.get("parent_death_signal"):
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if not cfg.get("pid_namespace"):
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    write_frame(reply_fd, {"ready": True, "pid": os.getpid(), "euid": os.geteuid()})
    while True:
        try:
            req = read_frame(req_fd)
            secret = take_secret(req_fd, int(req.get("secret_bytes") or 0))
        except (EOFError, OSError):
            return  # the pool went away: exit quietly
        try:
            reply = execute(cfg, req, secret)
        except Exception as exc:  # a server-side failure is infrastructure, never the code's
            reply = {"status": "server_error", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            if secret is not None:
                os.close(secret)
        write_frame(reply_fd, reply)


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
