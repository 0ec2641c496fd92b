"""The judge's end of the assert harness: the link to the solution process and its proxies.

Runs inside the sandbox (stdlib only; shipped as prelude source, see ``split``). A
``Remote`` stands for a solution-side object (a global by name, anything else by handle):
every use is a request over the link, answered with plain data that ``wire`` decodes
into fresh built-in objects; ``==`` and ``hash`` on a ``Remote`` are the judge's own
(identity). A lost solution process (timeout, crash, exit, broken protocol) is killed with
its group, and the call raises ``SolutionLost``, a ``BaseException`` test code cannot swallow.
"""

from __future__ import annotations

import builtins
import os
import signal
import struct
from typing import Any, NoReturn

if __name__ != "__main__":  # imported here; inside the sandbox code_wire's source ran first
    from verifiers.code.wire import FrameReader, WireError, decode, encode, write_frame


class TestTimeout(BaseException):
    """The per-test time limit ran out (raised by the judge's own timer)."""


class SolutionLost(BaseException):
    """The solution process died, was killed, broke the protocol or cannot (re)start.

    A ``BaseException`` so that test code's ``except Exception`` cannot turn it into a pass.
    """


class Unsupported(BaseException):
    """The test passed the solution something that cannot cross (e.g. a lambda)."""


class RemoteError(Exception):
    """An exception of a type the judge does not have, raised in the solution process."""


class RemoteBaseError(BaseException):
    """``SystemExit``/``KeyboardInterrupt``-like exceptions raised in the solution process."""


class Link:
    """The judge's end of the solution processes: start one, send it requests, kill it."""

    def __init__(self, first_pid: int, spawner_pid: int, ctl_w: int, rep_r: int, slots: list[tuple[int, int]]) -> None:
        self.spawner_pid, self.ctl_w, self.rep_r, self.slots = spawner_pid, ctl_w, rep_r, slots
        self.gen, self.pid, self.used, self.broken, self.next_id = 0, first_pid, 1, "", 0
        self.handles: dict[int, Remote] = {}
        self.reader = FrameReader(slots[0][1])

    def start(self) -> None:
        """Ask the spawner for a fresh solution process (after the last one was lost)."""
        if self.used >= len(self.slots):
            if self.spawner_pid:
                self.broken = f"the solution process was restarted {self.used - 1} times; no more"
            else:
                self.broken = "the solution process was lost earlier in this run"
            raise SolutionLost(self.broken)
        data = b""
        try:
            os.write(self.ctl_w, bytes([self.used]))
            data = os.read(self.rep_r, 4)
        except OSError:
            pass
        finally:  # refused, or interrupted by a timeout: the spawner is out of step for good
            if len(data) != 4:
                self.broken = "the solution processes' spawner is gone"
        if self.broken:
            raise SolutionLost(self.broken)
        self.gen, self.used, self.handles = self.used, self.used + 1, {}
        (self.pid,) = struct.unpack(">i", data)
        self.reader = FrameReader(self.slots[self.gen][1])

    def wait_ready(self) -> dict[str, str] | None:
        """None once the solution has run top-level, else why it did not (a record's fields)."""
        try:
            reply = self.reader.read()
        except BaseException as exc:
            self.kill()
            if isinstance(exc, TestTimeout):
                raise
            return _lost("ended before reporting" if isinstance(exc, EOFError) else "misbehaved")
        if type(reply) is dict and reply.get("ready") is True:
            return None
        self.kill()
        info = reply.get("exc") if type(reply) is dict else None
        return _remote_info(info) if type(info) is dict else _lost("misbehaved")

    def ensure(self) -> None:
        if self.gen >= 0:
            return
        if self.broken:
            raise SolutionLost(self.broken)
        self.start()
        failure = self.wait_ready()
        if failure is not None:
            self.broken = f"a restarted solution process failed: {failure.get('msg', '')}"
            raise SolutionLost(self.broken)

    def resolve(self, names: list[str]) -> list[tuple[str, Any]]:
        """(``missing`` | ``module`` | ``value``, payload) per name, from the solution's globals."""
        return self.request("resolve", ("r",), (list(names),))

    def request(self, op: str, target: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        ticket = self.send(op, target, args, kwargs)
        assert ticket is not None  # only an early send returns None
        return self.receive(ticket)

    def send(
        self,
        op: str,
        target: tuple,
        args: tuple = (),
        kwargs: dict | None = None,
        early: bool = False,
    ) -> tuple | None:
        """Send one request (starting a fresh process if needed); its ticket for ``receive``.

        ``early``: sent before the process reported ready; a refused write returns None.
        """
        if target[0] != "h":
            self.ensure()
        frame = {
            "op": op,
            "target": self._target(target),
            "id": self.next_id,
            "args": [self._encode(a) for a in args],
            "kw": [[k, self._encode(v)] for k, v in (kwargs or {}).items()],
        }
        self.next_id += 1
        try:
            write_frame(self.slots[self.gen][0], frame)
        except BaseException as exc:
            if early and isinstance(exc, OSError):
                return None  # it died loading: wait_ready says why
            self._lose(exc)
        return frame["id"], op, args

    def receive(self, ticket: tuple) -> Any:
        try:
            reply = self.reader.read()
        except BaseException as exc:
            self._lose(exc)
        return self._reply(reply, *ticket)

    def _lose(self, exc: BaseException) -> NoReturn:
        self.kill()
        if isinstance(exc, TestTimeout):
            raise exc
        raise SolutionLost("the solution process ended during a call") from None

    def _target(self, target: tuple) -> list:
        if target[0] == "h" and target[1] != self.gen:
            raise SolutionLost("an object of a solution process that was since restarted")
        return list(target)

    def _encode(self, value: Any) -> Any:
        return encode(value, self._other)

    def _other(self, obj: Any) -> list:
        if type(obj) is Remote:
            return list(self._target(obj._target))
        raise Unsupported(f"a {type(obj).__name__} cannot be passed to the solution process")

    def _reply(self, reply: Any, rid: int, op: str, frame_args: tuple) -> Any:
        try:
            if (
                type(reply) is not dict
                or type(reply.get("id")) is not int
                or reply["id"] != rid
                or type(reply.get("ok")) is not bool
            ):
                raise WireError("bad reply")
            if not reply["ok"]:
                info = reply.get("exc")
                if type(info) is not dict:
                    raise WireError("bad reply")
                raise _remote_exception(_remote_info(info))
            if op == "resolve":
                return _resolved(reply.get("value"), len(frame_args[0]), self._handle)
            return decode(reply.get("value"), self._handle)
        except WireError:
            self.kill()
            raise SolutionLost("the solution process broke the protocol") from None

    def _handle(self, tag: str, rest: list) -> Remote:
        if tag != "h" or len(rest) != 2 or rest[0] != self.gen or type(rest[1]) is not int:
            raise WireError("bad handle")
        if rest[1] not in self.handles:
            self.handles[rest[1]] = Remote(("h", self.gen, rest[1]))
        return self.handles[rest[1]]

    def kill(self) -> None:
        if self.gen < 0:
            return
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        for fd in self.slots[self.gen]:
            os.close(fd)
        self.gen = -1

    def close(self) -> None:
        self.kill()
        if self.spawner_pid:
            try:
                os.kill(self.spawner_pid, signal.SIGKILL)
            except OSError:
                pass


def _resolved(value: Any, count: int, handle: Any) -> list[tuple[str, Any]]:
    """The reply to ``resolve``: per name ``["-"]`` (missing), ``["M", module]`` or a value."""
    if type(value) is not list or len(value) != count:
        raise WireError("bad resolve reply")
    out: list[tuple[str, Any]] = []
    for v in value:
        if v == ["-"]:
            out.append(("missing", None))
        elif type(v) is list and len(v) == 2 and v[0] == "M" and type(v[1]) is str:
            out.append(("module", v[1]))
        else:
            out.append(("value", decode(v, handle)))
    return out


def _lost(how: str) -> dict[str, str]:
    return {"type": "SolutionLost", "msg": f"the solution process {how}", "where": ""}


def _remote_info(info: dict) -> dict[str, str]:
    return {k: str(info.get(k, ""))[:300] for k in ("type", "msg", "where")}


def _remote_exception(info: dict[str, str]) -> BaseException:
    cls = getattr(builtins, info["type"], None)
    exc: BaseException
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            exc = cls(info["msg"])
        except Exception:
            exc = RemoteError(info["msg"])
    elif isinstance(cls, type) and issubclass(cls, BaseException):
        exc = RemoteBaseError(info["msg"])
    else:
        exc = RemoteError(info["msg"])
    exc.remote_info = info  # type: ignore[union-attr]
    return exc


class Remote:
    """A solution-side object seen from the judge. Every use is a remote call; ``==`` is identity."""

    __slots__ = ("_target",)
    link: Link  # the run's Link, set by the judge

    def __init__(self, target: tuple) -> None:
        object.__setattr__(self, "_target", target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return Remote.link.request("call", self._target, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Remote.link.request("getattr", self._target, (name,))

    def __setattr__(self, name: str, value: Any) -> None:
        Remote.link.request("setattr", self._target, (name, value))

    def __iter__(self) -> Any:
        return Remote.link.request("iter", self._target)

    def __next__(self) -> Any:
        return Remote.link.request("next", self._target)

    def __len__(self) -> int:
        return Remote.link.request("len", self._target)

    def __bool__(self) -> bool:
        return Remote.link.request("bool", self._target)

    def __getitem__(self, key: Any) -> Any:
        return Remote.link.request("getitem", self._target, (key,))

    def __contains__(self, item: Any) -> bool:
        return Remote.link.request("contains", self._target, (item,))

    def __repr__(self) -> str:
        return f"<solution object {self._target[-1]!r}>"
