"""Turn a reference's tests into a sandboxed program that runs them and reports per-test results.

Records are JSON lines on fd 3 (never stdout, so printing cannot be mistaken for results),
each with the run's nonce; ``judge`` summarises them.

Assert style (``build_assert_run``) guarantees that a test's outcome is decided by code the
solution cannot reach. The tests and the nonce travel as the run's secret, which the fork
server hands to the program on fd 4 without reading it into its own memory. The program's
judge process forks the solution process *before* it reads them, then runs every unit itself
(``split``), calling into the solution over a pipe with plain data (``wire``). So
the solution process never holds the tests, expected values, the nonce or the result channel,
in memory or as a descriptor, and cannot open the judge's (the judge is not dumpable).
Patching its own ``os``/``json``/``sys``/``builtins``, printing or writing records anywhere,
exiting early, killing or stopping the judge, shadowing builtins or prompt helpers, or
returning objects with a rigged ``__eq__`` (they arrive as plain values or as opaque handles
that equal only themselves) can only make tests fail. The prompt (``prefix``) runs in the
judge. ``tests/sandbox/test_forgery.py`` holds one hostile program per attack.

What it does not guarantee:

- Native semantics where the split changes them: arguments are copies (a test does not see
  an in-place mutation by the solution); a test cannot hand the solution a function or an
  object of its own (a lambda: that test fails) nor use a solution class with ``isinstance``;
  only call, attribute get/set, iteration (a round trip per item), ``len``, ``bool``,
  indexing and ``in`` reach a solution object (no operators, ``str`` or ``repr``); each call
  is a round trip (~50 us: ~10^5 calls fill a 5 s test limit); a solution global that is plain
  data is copied once; a module the solution imported reaches the tests only if it is a plain
  standard-library one. After a timeout or crash the solution process is gone: later tests
  fail, unless ``restarts`` (fraction reward) gives them a fresh one.
- Isolation the sandbox must supply: judge and solution share a uid, so the backend must keep
  the code from writing the interpreter's import path (``rlimit`` without root does not) and
  from ptrace (seccomp); a solution that is root in a user namespace drops its capabilities.
- Hiding what the solution legitimately sees: the arguments of each call (it may remember
  them across samples of the same prompt). Earlier runs' records, kept in the fork server's
  freed memory, hold only exception types, lines, ``NameError`` and the solution's own messages.

Call style (``build_call_program``): the solution shares its process with the harness, but only
the arguments are in it; return values come back as JSON and the caller compares them.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from verifiers._ast import parse


@dataclass(frozen=True)
class Unit:
    """One step of the program: ``setup`` (runs, must not fail) or ``test`` (scored)."""

    kind: str
    source: str
    label: str


def split_assert_tests(test: str, entry_point: str | None) -> list[Unit]:
    """Top-level ``assert`` statements become tests; other statements run as setup, in order.

    With an entry point (HumanEval), the code defines ``check`` and ``check(entry_point)``
    is the single test. Code without top-level asserts is one test as a whole.
    """
    if entry_point:
        return [Unit("setup", test, "test code"), Unit("test", f"check({entry_point})", "check")]
    try:
        body = cast(ast.Module, parse(test)).body  # mode 'exec' parses to a Module
    except SyntaxError:
        return [Unit("test", test, "test code")]
    if not any(isinstance(node, ast.Assert) for node in body):
        return [Unit("test", test, "test code")]
    lines = test.splitlines()
    units = []
    for node in body:
        source = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if isinstance(node, ast.Assert):
            units.append(Unit("test", source, _short(source)))
        else:
            units.append(Unit("setup", source, f"setup line {node.lineno}"))
    return units


def keep_tests(units: Sequence[Unit], chosen: Sequence[int]) -> list[Unit]:
    """Keep every setup unit and only the chosen tests (indices among the tests)."""
    keep, index, out = set(chosen), 0, []
    for unit in units:
        if unit.kind == "test":
            if index in keep:
                out.append(unit)
            index += 1
        else:
            out.append(unit)
    return out


def _short(source: str, limit: int = 120) -> str:
    flat = " ".join(source.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


_PRELUDE_FILES = ("wire.py", "solution_process.py", "remote.py", "split.py")
ASSERT_PRELUDE: tuple[tuple[str, str], ...] = tuple(
    (name, (Path(__file__).parent / name).read_text(encoding="utf-8")) for name in _PRELUDE_FILES
)


def build_assert_run(
    solution: str,
    units: Sequence[Unit],
    prefix: str,
    entry_point: str | None,
    test_limit_s: float,
    nonce: str,
    restarts: int = 0,
) -> tuple[str, tuple[tuple[str, str], ...], bytes]:
    """(source, prelude, secret) of an assert-style run: the solution is in the source, the
    tests and the nonce only in the secret (read by the judge after the solution has forked).

    ``restarts``: fresh solution processes allowed after one is lost (a timeout, a crash), so
    later tests still run; worth its cost (~1.5 ms a run) only when partial credit counts.
    """
    source = f"main({solution!r}, {float(test_limit_s)!r}, {int(restarts)})\n"
    secret = {
        "nonce": nonce,
        "units": [[u.kind, u.source] for u in units],
        "prefix": prefix,
        "entry_point": entry_point or None,
    }
    return source, ASSERT_PRELUDE, json.dumps(secret).encode()


_CALL_PROGRAM = r"""
import json as _json, os as _os, signal as _signal, sys as _sys, traceback as _tb
def _harness(solution, rows, call, test_limit, nonce):
    class _TestTimeout(BaseException):
        pass
    def _alarm(signum, frame):
        raise _TestTimeout()
    def emit(record):
        record["nonce"] = nonce
        _os.write(3, (_json.dumps(record) + "\n").encode())
    def describe(exc):
        if isinstance(exc, _TestTimeout):
            return {"ok": False, "why": "timeout"}
        frames = _tb.extract_tb(exc.__traceback__)
        where = next((f"{f.filename}:{f.lineno}" for f in reversed(frames)
                      if f.filename == "solution.py"), "")
        return {"ok": False, "why": "exception", "type": type(exc).__name__,
                "msg": str(exc)[:300], "where": where}
    def timed(fn):
        _signal.setitimer(_signal.ITIMER_REAL, test_limit)
        try:
            return fn()
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _signal.signal(_signal.SIGALRM, _alarm)
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        timed(lambda: exec(compile(solution, "solution.py", "exec"), namespace))
    except BaseException as exc:
        emit({"unit": "solution", **describe(exc)})
        return
    target = namespace.get(call["class_name"] or call["fn_name"])
    if target is not None and call["class_name"]:
        try:
            target = getattr(target(), call["fn_name"], None)
        except BaseException as exc:
            emit({"unit": "solution", **describe(exc)})
            return
    if not callable(target):
        emit({"unit": "solution", "ok": False, "why": "missing", "msg": call["fn_name"]})
        return
    for index, args in enumerate(rows):
        try:
            value = timed(lambda: target(*args))
            try:
                record = {"ok": True, "value": _json.loads(_json.dumps(value))}
            except (TypeError, ValueError, RecursionError):
                record = {"ok": True, "unserialisable": repr(value)[:300]}
        except BaseException as exc:
            record = describe(exc)
        emit({"unit": index, "kind": "test", **record})
"""


def build_call_program(
    solution: str,
    call_args: Sequence[list],
    call_target: tuple[str, str | None],
    test_limit_s: float,
    nonce: str,
) -> str:
    """Source of the in-sandbox program for call-style tests (the function called per case)."""
    fn_name, class_name = call_target
    payload = json.dumps(
        {"rows": [list(a) for a in call_args], "call": {"fn_name": fn_name, "class_name": class_name}}
    )
    return (
        _CALL_PROGRAM
        + f"_payload = _json.loads({payload!r})\n"
        + f"_harness({solution!r}, _payload['rows'], _payload['call'], {float(test_limit_s)!r}, "
        + f"{nonce!r})\n"
        + "del _harness, _payload\n"
    )


def parse_results(text: str, nonce: str) -> dict[object, dict]:
    """unit index (or ``"solution"``) -> record; lines without our nonce are ignored."""
    records: dict[object, dict] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("nonce") == nonce and "unit" in record:
            records.setdefault(record["unit"], record)  # the first report of a unit counts
    return records
