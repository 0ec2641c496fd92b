"""Judge sandbox results per test: output comparison, value comparison and failure reasons."""

from __future__ import annotations

import math
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers.code.harness import Unit
from verifiers.sandbox import CRASHED, INFRA_ERROR, OUTPUT_LIMIT, TIMEOUT, ExecResult


@dataclass(frozen=True)
class Outcome:
    """One test's result. kind: pass, wrong_output, exception, timeout, memory, output_limit,
    crashed, missing, not_run or infra (a sandbox failure: the verdict becomes ``error``)."""

    passed: bool
    kind: str
    detail: str = ""


PASS = Outcome(True, "pass")
NOT_RUN = Outcome(False, "not_run", "skipped after an earlier failure")


def outcome_from_exec(result: ExecResult) -> list[Outcome] | None:
    """The outcome of every test when the run failed as a whole (infrastructure), else None."""
    if result.status == INFRA_ERROR:
        return [Outcome(False, "infra", result.details)]
    return None


def run_failure(result: ExecResult) -> Outcome:
    """Why a test has no result: the run stopped before reaching it."""
    if result.status == TIMEOUT:
        return Outcome(False, "timeout", f"sample time limit ({result.wall_s:.1f}s) exceeded")
    if result.status == OUTPUT_LIMIT:
        return Outcome(False, "output_limit", "printed more than the output cap; killed")
    if result.status == CRASHED:
        return Outcome(False, "crashed", result.details)
    if result.signal == signal.SIGXCPU:  # RLIMIT_CPU: a CPU-bound loop meets it with the deadline
        return Outcome(False, "timeout", "CPU time limit exceeded")
    if result.signal is not None:
        kind = "memory" if result.signal in (signal.SIGKILL, signal.SIGSEGV) else "exception"
        return Outcome(False, kind, f"killed by signal {result.signal}" + _stderr_tail(result))
    return Outcome(False, "exception", f"exited with code {result.exit_code} before reporting" + _stderr_tail(result))


def _stderr_tail(result: ExecResult) -> str:
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    return f" ({lines[-1][:200]})" if lines else ""


def record_failure(record: Mapping[str, Any]) -> Outcome:
    why = record.get("why")
    if why == "timeout":
        return Outcome(False, "timeout", "per-test time limit exceeded")
    if why == "missing":
        return Outcome(False, "exception", f"the solution defines no callable {record.get('msg')!r}")
    exc_type = str(record.get("type", "Exception"))
    kind = "memory" if exc_type == "MemoryError" else "exception"
    where = f" at {record['where']}" if record.get("where") else ""
    return Outcome(False, kind, f"{exc_type}{where}: {record.get('msg', '')}".rstrip(": "))


def _solution_failure(records: Mapping[object, dict]) -> Outcome | None:
    record = records.get("solution")
    if record is None:
        return None
    failure = record_failure(record)
    return Outcome(False, failure.kind, f"solution failed to load: {failure.detail}")


def summarise(records: Mapping[object, dict], units: Sequence[Unit], result: ExecResult) -> list[Outcome]:
    """Assert-style: one outcome per test unit, in order."""
    broken = _solution_failure(records)
    outcomes: list[Outcome] = []
    blocker: Outcome | None = broken
    for index, unit in enumerate(units):
        record = records.get(index)
        if blocker is None and record is not None and not record.get("ok"):
            failure = record_failure(record)
            if unit.kind == "setup":
                blocker = Outcome(False, failure.kind, f"{unit.label} failed: {failure.detail}")
                continue
            outcomes.append(Outcome(False, failure.kind, f"{unit.label}: {failure.detail}"))
        elif unit.kind == "test":
            if blocker is not None:
                outcomes.append(blocker)
            elif record is None:
                blocker = run_failure(result)
                outcomes.append(blocker)
            else:
                outcomes.append(PASS)
    return outcomes


def judge_call(
    records: Mapping[object, dict], index: int, expected: Any, tol: float | None, result: ExecResult
) -> Outcome:
    broken = _solution_failure(records)
    if broken is not None:
        return broken
    record = records.get(index)
    if record is None:
        return run_failure(result)
    if not record.get("ok"):
        return record_failure(record)
    if "unserialisable" in record:
        return Outcome(False, "wrong_output", f"returned a non-JSON value {record['unserialisable']}")
    if values_equal(record.get("value"), expected, tol):
        return PASS
    return Outcome(False, "wrong_output", f"expected {_show(expected)}, got {_show(record.get('value'))}")


def values_equal(got: Any, want: Any, tol: float | None = None) -> bool:
    """JSON-value equality; numbers with a float involved compare within ``tol`` (rel/abs)."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        if isinstance(got, int) and isinstance(want, int):
            return got == want
        t = 1e-6 if tol is None else tol
        return math.isclose(got, want, rel_tol=t, abs_tol=t)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(values_equal(g, w, tol) for g, w in zip(got, want, strict=True))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(values_equal(got[k], want[k], tol) for k in got)
    return type(got) is type(want) and got == want


def judge_stdio(result: ExecResult, expected: str, tol: float | None) -> Outcome:
    if result.status != "ok" or result.signal is not None:  # stopped, not exited
        return run_failure(result)
    if result.exit_code != 0:
        kind = "memory" if "MemoryError" in result.stderr else "exception"
        return Outcome(False, kind, f"exit code {result.exit_code}{_stderr_tail(result)}")
    got, want = _lines(result.stdout), _lines(expected)
    if len(got) != len(want):
        return Outcome(False, "wrong_output", f"expected {len(want)} lines, got {len(got)}")
    for number, (g, w) in enumerate(zip(got, want, strict=True), start=1):
        if not _line_matches(g.split(), w.split(), tol):
            return Outcome(False, "wrong_output", f"line {number}: expected {_show(w)}, got {_show(g)}")
    return PASS


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _line_matches(got: list[str], want: list[str], tol: float | None) -> bool:
    if len(got) != len(want):
        return False
    return all(g == w or (tol is not None and _close(g, w, tol)) for g, w in zip(got, want, strict=True))


def _close(got: str, want: str, tol: float) -> bool:
    try:
        g, w = float(got), float(want)
    except ValueError:
        return False
    return math.isfinite(g) and math.isclose(g, w, rel_tol=tol, abs_tol=tol)


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
