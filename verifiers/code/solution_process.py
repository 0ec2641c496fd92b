"""The untrusted side of the assert harness: the solution process, and the spawner of fresh ones.

Runs inside the sandbox (stdlib only; shipped as prelude source, see ``split``). Both are
forked by the judge before it reads the tests, so neither ever holds them. The solution
process closes every descriptor but its own request/reply pipes, leaves the judge's process
group, gives up capabilities, runs the solution top-level and then answers remote calls
(``op`` on a global by name or on an object by handle number) with plain data or handles.
Nothing here is trusted once the solution has run: the judge decodes every reply strictly.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import struct
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any, NoReturn

if __name__ != "__main__":  # imported here; inside the sandbox code_wire's source ran first
    from verifiers.code.wire import FrameReader, WireError, decode, encode, write_frame

MAX_RESTARTS = 7
_COPY_BYTES = 1 << 20  # a global the tests use is copied to the judge up to this size
_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP = 1, 24

_LIBC: list[Any] = []  # the C library, loaded once (by the fork server, see below)


def libc() -> Any:
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None))
    return _LIBC[0]


def prctl(option: int, value: int) -> int:
    """Linux ``prctl(2)`` with one argument."""
    return libc().prctl(option, value, 0, 0, 0)


if __name__ == "__main__":  # run once as a fork server's prelude: every judge inherits it loaded
    libc()


def close_all_but(keep: set[int]) -> None:
    """Close every descriptor from 3 up except those in ``keep``."""
    low = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _drop_capabilities() -> None:
    """Give up every capability (code that is root in a user namespace) for good."""
    import ctypes

    for cap in range(64):
        prctl(_PR_CAPBSET_DROP, cap)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    libc().capset(header, (ctypes.c_uint32 * 6)())


def _solution_main(gen: int, req_r: int, resp_w: int, solution: str, mask: set) -> NoReturn:
    """A solution process (forked by the judge, or later by the spawner); never returns.

    Its prints go to /dev/null (they cannot matter, and the run then ends with the judge).
    ``mask``: the signal mask to restore (the judge blocks signals; see ``split``).
    """
    try:
        close_all_but({0, 1, 2, req_r, resp_w})  # results (3), tests (4), the other pipes
        _to_devnull(1, 2)
        os.setpgid(0, 0)
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.geteuid() == 0:  # root in a user namespace: capabilities over the judge
            _drop_capabilities()
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _serve(gen, req_r, resp_w, solution)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(0)


def _serve(gen: int, req_r: int, resp_w: int, solution: str) -> None:
    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(compile(solution, "solution.py", "exec"), namespace)
    except BaseException as exc:
        write_frame(resp_w, {"ready": False, "exc": _describe_here(exc)})
        return
    write_frame(resp_w, {"ready": True})
    table, reader = _Table(gen, namespace), FrameReader(req_r)
    while True:
        try:
            request = reader.read()
        except (EOFError, WireError, OSError):
            return
        reply = {"id": request["id"]}
        try:
            reply.update(ok=True, value=table.answer(request))
        except BaseException as exc:
            reply.update(ok=False, exc=_describe_here(exc))
        try:
            write_frame(resp_w, reply)
        except WireError as exc:
            write_frame(resp_w, {"id": request["id"], "ok": False, "exc": _describe_here(exc)})


class _Table:
    """The solution side's objects: globals by name, everything else by handle number."""

    def __init__(self, gen: int, namespace: dict[str, Any]) -> None:
        self.gen, self.namespace = gen, namespace
        self.objects: list[Any] = []
        self.numbers: dict[int, int] = {}

    def answer(self, request: dict) -> Any:
        op, args = request["op"], [self.decode(a) for a in request["args"]]
        if op == "resolve":
            return [self._global(name) for name in args[0]]
        target = self.decode(request["target"])
        kwargs = {k: self.decode(v) for k, v in request["kw"]}
        return self.encode(_OPS[op](target, *args, **kwargs))

    def _global(self, name: str) -> Any:
        if name not in self.namespace:
            return ["-"]
        value = self.namespace[name]
        if isinstance(value, types.ModuleType):
            return ["M", value.__name__]
        try:
            node = self.encode(value)
            if type(node) is list and node[0] != "h" and len(json.dumps(node)) > _COPY_BYTES:
                raise WireError("too big to copy")
            return node
        except (WireError, RecursionError):  # too big or deep to copy: the judge gets a handle
            return self._handle(value)

    def encode(self, value: Any) -> Any:
        return encode(value, self._handle)

    def _handle(self, obj: Any) -> list:
        number = self.numbers.get(id(obj))
        if number is None:
            number = self.numbers[id(obj)] = len(self.objects)
            self.objects.append(obj)  # kept alive, so its id() is never reused
        return ["h", self.gen, number]

    def decode(self, node: Any) -> Any:
        return decode(node, self._lookup)

    def _lookup(self, tag: str, rest: list) -> Any:
        if tag == "n":
            return self.namespace[rest[0]] if rest[0] in self.namespace else _missing(rest[0])
        if tag == "h" and rest[0] == self.gen:
            return self.objects[rest[1]]
        raise WireError("unknown handle")


def _missing(name: str) -> NoReturn:
    raise NameError(f"name {name!r} is not defined")


def _setattr(obj: Any, name: str, value: Any) -> None:
    setattr(obj, name, value)


_OPS: dict[str, Callable[..., Any]] = {
    "call": lambda obj, *a, **k: obj(*a, **k),
    "getattr": getattr,
    "setattr": _setattr,
    "iter": iter,
    "next": next,
    "len": len,
    "bool": bool,
    "getitem": lambda obj, key: obj[key],
    "contains": lambda obj, item: item in obj,
}


def _describe_here(exc: BaseException) -> dict[str, str]:
    where = ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "solution.py":
            where = f"solution.py:{lineno}"
    try:
        msg = str(exc)[:300]
    except BaseException:
        msg = "?"
    return {"type": type(exc).__name__[:100], "msg": msg, "where": where}


def _spawner_main(ctl_r: int, rep_w: int, slots: list, solution: str, mask: set) -> NoReturn:
    """Forks a solution process for each slot number read from ``ctl_r``; never returns."""
    try:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        close_all_but({0, 1, 2, ctl_r, rep_w, *(fd for s in slots[1:] for fd in (s[0], s[3]))})
        _to_devnull(1, 2)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reap its solution processes at once
        while data := os.read(ctl_r, 1):
            gen = data[0]
            req_r, _, _, resp_w = slots[gen]
            pid = os.fork()
            if pid == 0:
                _solution_main(gen, req_r, resp_w, solution, mask)
            os.write(rep_w, struct.pack(">i", pid))
            os.close(req_r)
            os.close(resp_w)
    finally:
        os._exit(0)


def _to_devnull(*fds: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)


def start_processes(solution: str, restarts: int, mask: set) -> tuple:
    """Before any test is read: fork the first solution process, and (with ``restarts``) the
    spawner of its replacements. Both are copies of the judge as it is now; the judge keeps
    only its ends of the pipes. Each process costs ~1.5 ms, so the spawner is optional.

    Returns (solution pid, spawner pid or 0, control pipe, pid pipe, the judge's (request
    write, reply read) ends per process slot).
    """
    import gc

    gc.freeze()  # the judge's garbage collections then leave the pages it shares alone
    restarts = max(0, min(int(restarts), MAX_RESTARTS))
    slots = [(*os.pipe(), *os.pipe()) for _ in range(1 + restarts)]  # req_r, req_w, resp_r, resp_w
    first = os.fork()
    if first == 0:
        _solution_main(0, slots[0][0], slots[0][3], solution, mask)
    os.close(slots[0][0])
    os.close(slots[0][3])
    if not restarts:
        return first, 0, -1, -1, [(slots[0][1], slots[0][2])]
    ctl_r, ctl_w = os.pipe()
    rep_r, rep_w = os.pipe()
    spawner = os.fork()
    if spawner == 0:
        _spawner_main(ctl_r, rep_w, slots, solution, mask)
    for fd in (ctl_r, rep_w, *(fd for s in slots[1:] for fd in (s[0], s[3]))):
        os.close(fd)
    return first, spawner, ctl_w, rep_r, [(s[1], s[2]) for s in slots]
