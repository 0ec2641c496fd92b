"""Tool plumbing shared by environments: the ``@tool`` guard, the call log, dispatch and scoring.

A tool is a public environment method decorated with ``@tool(writes=...)``. The guard binds
and type-checks arguments before the body runs, so hostile input (missing or unknown
arguments, wrong types, huge strings) becomes an ``error: ...`` observation for the model and
never an exception. Every call is logged for M2RL-style scoring (all calls must match).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from verifiers.verdict import Verdict, clip

MAX_STRING_CHARS = 400  # longer string arguments are rejected: nothing in a workplace needs them
MAX_INT = 10**9
ERROR = "error: "


class ToolError(Exception):
    """A domain failure (unknown id, duplicate name) reported to the model as an observation."""


@dataclass(frozen=True)
class CallRecord:
    """One tool call as the environment saw it; ``arguments`` include filled-in defaults."""

    name: str
    arguments: Mapping[str, Any]
    ok: bool
    writes: bool

    def key(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """Comparison form: case and spacing of strings do not count."""
        return self.name, tuple(sorted((k, normalize(v)) for k, v in self.arguments.items()))


class HasCallLog(Protocol):
    _calls: list[CallRecord]


class ToolMethod(Protocol):
    """What ``@tool`` makes of a method: the guard, marked with ``writes``; ``__name__`` and
    ``__wrapped__`` (the unguarded body) are set by ``functools.wraps``."""

    writes: bool
    __name__: str
    __wrapped__: Callable[..., str]

    def __call__(self, *args: Any, **kwargs: Any) -> str: ...


def normalize(value: Any) -> Any:
    return " ".join(value.split()).casefold() if isinstance(value, str) else value


def _type_problem(name: str, value: Any, expected: Any) -> str | None:
    if expected is bool:
        ok = isinstance(value, bool)
    elif expected is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) < MAX_INT
    elif expected is str:
        ok = isinstance(value, str)
        if ok and len(value) > MAX_STRING_CHARS:
            return f"argument {name!r} is too long ({len(value)} chars; limit {MAX_STRING_CHARS})"
    else:
        ok = True
    if ok:
        return None
    return f"argument {name!r} must be {getattr(expected, '__name__', expected)}, got {type(value).__name__}"


def tool(*, writes: bool) -> Callable[[Callable[..., str]], ToolMethod]:
    """Mark a method as a tool; ``writes`` says whether it may change the environment state."""

    def decorate(method: Callable[..., str]) -> ToolMethod:
        signature = inspect.signature(method)
        hints = typing.get_type_hints(method)

        # self is positional-only, so a model's argument named "self" reaches the check below
        @functools.wraps(method)
        def guarded(self: HasCallLog, /, *args: Any, **kwargs: Any) -> str:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError as exc:
                return _fail(self, method.__name__, kwargs, writes, f"{method.__name__}: {exc}")
            bound.apply_defaults()
            arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
            for name, value in arguments.items():
                problem = _type_problem(name, value, hints.get(name))
                if problem:
                    return _fail(self, method.__name__, arguments, writes, f"{method.__name__}: {problem}")
            try:
                result = method(self, **arguments)
            except ToolError as exc:
                return _fail(self, method.__name__, arguments, writes, str(exc))
            self._calls.append(CallRecord(method.__name__, arguments, True, writes))
            return result

        marked = cast(ToolMethod, guarded)  # functools.wraps set __wrapped__; writes is set here
        marked.writes = writes  # marks the method as a tool
        return marked

    return decorate


def _fail(env: HasCallLog, name: str, arguments: Mapping[str, Any], writes: bool, message: str) -> str:
    safe = {str(k): clip(repr(v), 80) for k, v in arguments.items()}
    env._calls.append(CallRecord(name, safe, False, writes))
    return ERROR + clip(message, 300)


def tool_names(env_class: type) -> list[str]:
    """The tools of an environment class, as TRL will expose them (public decorated methods)."""
    return sorted(
        name
        for name, member in inspect.getmembers(env_class, inspect.isfunction)
        if not name.startswith("_") and hasattr(member, "writes")
    )


def call_tool(env: HasCallLog, name: Any, arguments: Any) -> str:
    """Run one call by name as a model would; unknown tools and non-object arguments give errors."""
    names = tool_names(type(env))
    if not isinstance(name, str) or name not in names:
        env._calls.append(CallRecord(clip(str(name), 80), {}, False, False))
        return ERROR + clip(f"unknown tool {name!r}; tools: {', '.join(names)}", 300)
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        env._calls.append(CallRecord(name, {}, False, False))
        return ERROR + f"{name}: arguments must be an object with string keys"
    return getattr(env, name)(**arguments)


def compare_episode(
    calls: Sequence[CallRecord],
    gold: Sequence[CallRecord],
    state: Any,
    gold_state: Any,
) -> Verdict:
    """M2RL's rule (all calls must match), made precise. Walking the gold calls in order over
    the model's successful calls: each gold state-changing call must be the model's next
    state-changing call (arguments compared case- and space-insensitively), each gold lookup
    must be done, by the same tool, before the next state change; no state change may follow
    the last gold call; and the final state must equal the gold final state. Failed calls
    change nothing and are tolerated; extra lookups are harmless."""
    done = [c for c in calls if c.ok]
    extracted = clip(str([c.name for c in done]), 200)
    position = 0
    for want in gold:
        while position < len(done) and not done[position].writes and (want.writes or done[position].name != want.name):
            position += 1  # an extra lookup
        if position == len(done):
            return Verdict.wrong(extracted, clip(f"expected call {want.name} {dict(want.arguments)} not made"))
        got = done[position]
        if want.writes and got.key() != want.key():
            return Verdict.wrong(
                extracted,
                clip(f"called {got.name} {dict(got.arguments)}; expected {want.name} {dict(want.arguments)}"),
            )
        if not want.writes and got.writes:
            return Verdict.wrong(extracted, f"{got.name} changed state before the lookup {want.name}")
        position += 1
    extra = [c.name for c in done[position:] if c.writes]
    if extra:
        return Verdict.wrong(extracted, clip(f"unexpected state-changing calls: {', '.join(extra)}"))
    if state != gold_state:
        return Verdict.wrong(extracted, "final state differs from the expected state")
    return Verdict.correct(extracted)
