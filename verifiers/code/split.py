"""The assert harness's judge: it runs the tests itself, in a process the solution cannot reach.

Runs inside the sandbox (stdlib only; shipped as prelude source after ``wire``; entry
point ``main``). The process the fork server starts becomes the **judge**. Before it reads
the tests it forks the **solution process** (and, when restarts are allowed, a **spawner**
of fresh ones: a pristine copy that never holds the tests). The solution process runs the
solution top-level, then serves remote calls over its own pair of pipes, with every other
descriptor closed (fd 3: results, fd 4: tests), no capabilities and its own process group.
Only then does the judge read the tests (the fork server hands them over on fd 4 without
ever holding them in its own memory), bind each solution name the tests use to a ``Remote``
proxy, run every unit itself, and write one JSON record per unit, with the run's nonce, to
fd 3. The prompt (``prefix``) runs in the judge: helpers the tests call (HumanEval's
``poly``, ``encode_cyclic``) are the prompt's, whatever the solution redefines.

A proxy call sends ``(op, target, args)`` as plain data (``wire``) and gets plain data
back, decoded into fresh built-in objects, so every comparison runs in the judge. Objects
that are not plain data come back as opaque handles: they may be called, passed back, have
attributes read or set, be iterated, measured or indexed (each one a remote call); ``==`` on
a handle is identity. The judge is not dumpable (a same-uid process cannot open its
``/proc/<pid>/{fd,mem}``), blocks catchable signals other than its own timer, and removes
the run's writable folder from its import path. A per-test wall-clock timer runs in the
judge; a solution process that times out, dies or breaks the protocol is killed with its
group and that test fails; the later ones fail too, or (``restarts``) get a fresh process.
Records carry no message raised by test code but ``NameError``'s (one may quote expected
values, and records outlive the run in the fork server's memory), only types and lines.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import signal
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

if __name__ != "__main__":  # imported here; inside the sandbox the other parts ran first
    from verifiers.code.remote import Link, Remote, SolutionLost, TestTimeout, Unsupported
    from verifiers.code.solution_process import prctl, start_processes

RESULT_FD = 3
SECRET_FD = 4
_PR_SET_DUMPABLE = 4
_PLAIN_MODULES = frozenset(
    "array base64 binascii bisect calendar cmath collections copy datetime decimal fractions "
    "functools hashlib heapq itertools json math numbers operator random re statistics string "
    "struct sys textwrap time typing unicodedata".split()
)
_UNBLOCKED = (
    "SIGALRM",
    "SIGKILL",
    "SIGSTOP",
    "SIGSEGV",
    "SIGBUS",
    "SIGFPE",
    "SIGILL",
    "SIGABRT",
    "SIGTRAP",
    "SIGSYS",
    "SIGXCPU",
)  # the judge's timer, and faults and limits


class _Timer:
    armed = False

    @staticmethod
    def fire(signum: int, frame: Any) -> None:
        if _Timer.armed:
            raise TestTimeout()


def timed(fn: Callable[[], Any], limit: float) -> Any:
    _Timer.armed = True
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return fn()
    finally:
        _Timer.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)


class Judge:
    """Runs the units with the solution's names bound to proxies; one record per unit."""

    def __init__(self, link: Link, secret: dict, test_limit: float) -> None:
        self.link, self.limit, self.nonce = link, test_limit, secret["nonce"]
        self.units, self.entry = secret["units"], secret.get("entry_point")
        self.prefix = secret.get("prefix") or ""
        self.ns: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}

    def run(self) -> None:
        codes = [_compiled(source) for _, source in self.units]
        self._run_prefix()
        if self.entry:
            self.ns[self.entry] = Remote(("n", self.entry))
        names = set().union(*(_global_names(c) for c in codes if type(c) is types.CodeType))
        names -= self.ns.keys()
        plain = sorted(n for n in names if not hasattr(builtins, n))
        ticket = self.link.send("resolve", ("r",), (plain,), early=True) if plain else None
        failure = self._load() or self._bind(names, plain, ticket)
        if failure is not None:
            self.emit("solution", None, failure)
            return
        for index, ((kind, _), code) in enumerate(zip(self.units, codes, strict=True)):
            record = self._run_unit(code)
            self.emit(index, kind, record)
            if kind == "setup" and not record["ok"]:
                return

    def _run_prefix(self) -> None:
        """The trusted prompt's helpers (HumanEval ``poly``...) live here; its stub is replaced.

        A prompt with no helper (most) only lends its imports: the compile is saved."""
        imports = _import_lines(self.prefix)
        sources: tuple[str, ...] = (imports,)
        if _defines_helpers(self.prefix, self.entry):
            completed = self.prefix.rstrip() + "\n    pass\n"  # a prompt ending in a bare ``def``
            sources = (self.prefix, completed, imports)
        for source in sources:
            try:
                timed(functools.partial(self._exec_prefix, source), self.limit)
                return
            except BaseException:
                continue

    def _exec_prefix(self, source: str) -> None:
        exec(compile(source, "<prefix>", "exec"), self.ns)

    def _load(self) -> dict | None:
        try:
            failure = timed(self.link.wait_ready, self.limit)
        except BaseException as exc:
            return _describe_judged(exc)
        return None if failure is None else _failure(failure)

    def _bind(self, names: set[str], plain: list[str], ticket: tuple | None) -> dict | None:
        """Bind every global the tests use that neither they nor the prompt define (the
        request for ``plain`` names, sent early, is ``ticket``)."""
        builtin = sorted(n for n in names if hasattr(builtins, n))
        try:
            found = timed(lambda: self._resolve(plain, ticket), self.limit)
            if not self.entry and not found:  # the function under test is named like a builtin
                timed(lambda: self._resolve(builtin, None), self.limit)
        except BaseException as exc:
            return _describe_judged(exc)
        return None

    def _resolve(self, want: list[str], ticket: tuple | None) -> int:
        """Bind what the solution defines under ``want``; how many are solution objects."""
        if not want:
            return 0
        found, answers = 0, self.link.receive(ticket) if ticket else self.link.resolve(want)
        for name, (kind, value) in zip(want, answers, strict=True):
            if kind == "module":
                value = _stdlib_module(value)
                if value is None:
                    continue
            elif kind == "missing":
                continue
            elif type(value) is Remote:
                value = Remote(("n", name))  # looked up by name: it survives a restart
                found += 1
            self.ns[name] = value
        return found

    def _run_unit(self, code: types.CodeType | BaseException) -> dict:
        if type(code) is not types.CodeType:
            return _describe_judged(code)
        try:
            timed(lambda: exec(code, self.ns), self.limit)
        except BaseException as exc:
            return _describe_judged(exc)
        return {"ok": True}

    def emit(self, unit: object, kind: str | None, record: dict) -> None:
        line = json.dumps({"unit": unit, "kind": kind, **record, "nonce": self.nonce}) + "\n"
        view = memoryview(line.encode("utf-8", "backslashreplace"))
        while view:
            view = view[os.write(RESULT_FD, view) :]


def _compiled(source: str) -> types.CodeType | BaseException:
    try:
        return compile(source, "<test>", "exec")
    except (SyntaxError, ValueError) as exc:
        return exc


def _global_names(code: types.CodeType) -> set[str]:
    """Every global, attribute and import name ``code`` and its nested functions use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if type(const) is types.CodeType:
            names |= _global_names(const)
    return names


def _failure(info: dict) -> dict:
    return {"ok": False, "why": "exception", **info}


def _describe_judged(exc: BaseException) -> dict:
    if isinstance(exc, TestTimeout):
        return {"ok": False, "why": "timeout"}
    info = getattr(exc, "remote_info", None)
    if type(info) is dict:
        return _failure(info)
    where = ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "<test>":
            where = f"<test>:{lineno}"
    if isinstance(exc, SyntaxError) and exc.filename == "<test>":
        where = f"<test>:{exc.lineno}"
    # A message raised by test code may quote expected values, and records outlive the run in
    # the fork server's freed memory, where a later solution process could look: keep only
    # ours and NameError's (it names what the solution failed to define).
    msg = str(exc)[:300] if isinstance(exc, (SolutionLost, Unsupported, NameError)) else ""
    return _failure({"type": type(exc).__name__, "msg": msg, "where": where})


def _defines_helpers(prefix: str, entry: str | None) -> bool:
    """Does the prompt define a function or class besides the entry point (a cheap look)?"""
    for line in prefix.splitlines():
        words = line.replace("(", " ").replace(":", " ").split()
        if len(words) > 1 and words[0] in ("def", "class") and words[1] != entry:
            return True
        if len(words) > 2 and words[:2] == ["async", "def"] and words[2] != entry:
            return True
    return False


def _import_lines(source: str) -> str:
    return "\n".join(ln for ln in source.splitlines() if ln.startswith(("import ", "from ")))


def _stdlib_module(name: str) -> types.ModuleType | None:
    """The judge's own copy of a module the solution imported (one already loaded, or a plain
    standard-library one; never one whose import does things, like ``antigravity``), or None."""
    if name not in sys.modules and name not in _PLAIN_MODULES:
        return None
    try:
        import importlib

        return importlib.import_module(name)
    except BaseException:
        return None


def _harden_judge() -> set:
    """Not dumpable; deaf to every signal but its timer's and fatal ones; the mask it had."""
    prctl(_PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGALRM, _Timer.fire)
    unblocked = {getattr(signal, name) for name in _UNBLOCKED}
    return signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - unblocked)


def _read_secret() -> dict:
    os.lseek(SECRET_FD, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(SECRET_FD, 1 << 20):
        chunks.append(chunk)
    os.close(SECRET_FD)
    return json.loads(b"".join(chunks))


def _seal_judge() -> None:
    """After the fork: nothing the solution can write is imported; the judge prints nowhere."""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
    os.chdir("/")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def main(solution: str, test_limit: float, restarts: int = 0) -> None:
    """The judge: start the solution process, then read the tests and run them.

    ``restarts``: how many fresh solution processes may replace one lost to a timeout, a
    crash or an exit (each later test then runs in a fresh one); 0: the rest just fail.
    """
    mask = _harden_judge()
    link = Remote.link = Link(*start_processes(solution, restarts, mask))
    try:
        secret = _read_secret()
        _seal_judge()
        Judge(link, secret, test_limit).run()
    finally:
        link.close()
