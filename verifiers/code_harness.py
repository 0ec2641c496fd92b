"""Turn a reference's tests into one Python program that runs them and reports per-test results.

The program runs inside the sandbox. It executes the solution, then each test unit under its
own ``SIGALRM`` time limit, and writes one JSON line per unit to fd 3 (never stdout, so the
solution's prints cannot be mistaken for results). Call-style return values are sent back as
JSON and compared by the caller, so an object with a rigged ``__eq__`` cannot pass.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass


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
        body = ast.parse(test).body
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


_PROGRAM = r"""
import json as _json, os as _os, signal as _signal, sys as _sys, traceback as _tb
def _harness(solution, units, call, test_limit, nonce):
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
                      if f.filename in ("solution.py", "<test>")), "")
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
    if call is not None:
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
    for index, (kind, source, args) in enumerate(units):
        try:
            if call is not None:
                value = timed(lambda: target(*args))
                try:
                    record = {"ok": True, "value": _json.loads(_json.dumps(value))}
                except (TypeError, ValueError, RecursionError):
                    record = {"ok": True, "unserialisable": repr(value)[:300]}
            else:
                timed(lambda: exec(compile(source, "<test>", "exec"), namespace))
                record = {"ok": True}
        except BaseException as exc:
            record = describe(exc)
        emit({"unit": index, "kind": kind, **record})
        if kind == "setup" and not record["ok"]:
            return
"""


def build_program(
    solution: str,
    units: Sequence[Unit] | None,
    call_args: Sequence[list] | None,
    call_target: tuple[str, str | None] | None,
    test_limit_s: float,
    nonce: str,
) -> str:
    """Source of the in-sandbox program for assert-style (``units``) or call-style tests."""
    if call_target is not None:
        fn_name, class_name = call_target
        rows = [("test", "", list(args)) for args in call_args or []]
        call = {"fn_name": fn_name, "class_name": class_name}
    else:
        rows = [(u.kind, u.source, []) for u in units or []]
        call = None
    payload = json.dumps({"rows": rows, "call": call})
    return (
        _PROGRAM
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
