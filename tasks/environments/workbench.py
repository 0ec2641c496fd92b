"""The workbench environment: NeMo Gym's workplace assistant (27 tools) over its five databases.

One instance per rollout (TRL's ``environment_factory`` product). ``reset(**row)`` loads the
row's task and a fresh copy of the databases; the public methods are NeMo Gym's tools, under
the same names and parameters. Scoring is NeMo Gym's rule: run the gold calls on a fresh copy
and compare the changeable tables (emails, calendar, plots, project tasks, CRM) after both,
strings case-insensitive outside the status/list/board columns. Lookups and failed calls do
not count; only the final state does (reward 1 or 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tasks.environments.tooling import CallRecord, call_tool, tool_names
from tasks.environments.workbench_data import (
    DatabaseMissingError,
    State,
    database_dir,
    load_database,
    snapshot,
)
from tasks.environments.workbench_mail import MAIL_TOOLS
from tasks.environments.workbench_office import OFFICE_TOOLS
from tasks.environments.workplace import task_of
from verifiers.verdict import Verdict, clip

NAME = "workbench"


class WorkbenchEnvironment:
    """Email, calendar, analytics, project tasks, CRM and the company directory for one episode."""

    def __init__(self) -> None:
        self._state: State = {}
        self._directory: tuple[str, ...] = ()
        self._task: dict[str, Any] | None = None
        self._problem: str | None = None  # why the databases could not be loaded
        self._calls: list[CallRecord] = []

    def reset(self, **row: Any) -> None:
        """Start an episode from a dataset row (its ``reference`` holds the task)."""
        self._task = task_of(row, NAME)
        self._open((self._task or {}).get("database"))
        return None  # the request is already in the row's prompt

    def _open(self, folder: str | None) -> None:
        self._calls = []
        try:
            self._state, self._directory = load_database(folder or database_dir())
            self._problem = None
        except DatabaseMissingError as exc:
            self._state, self._directory, self._problem = {}, (), str(exc)

    def _run(self, calls: Sequence[Mapping[str, Any]]) -> list[str]:
        """Run calls as a model would; the observations, in order."""
        return [call_tool(self, c.get("name"), c.get("arguments", {})) for c in calls]

    def _verdict(self) -> Verdict | None:
        """Score this episode against the task's gold calls; None when no task is loaded."""
        if self._task is None:
            return None
        if self._problem:
            return Verdict.error(clip(self._problem))
        gold = type(self)()
        gold._open(self._task.get("database"))
        gold._run(self._task.get("ground_truth", []))
        extracted = clip(str([c.name for c in self._calls if c.ok]), 200)
        mine, want = snapshot(self._state), snapshot(gold._state)
        differ = [table for table in want if mine[table] != want[table]]
        if differ:
            return Verdict.wrong(extracted, f"final state differs in: {', '.join(differ)}")
        return Verdict.correct(extracted)


for _tool in MAIL_TOOLS + OFFICE_TOOLS:
    setattr(WorkbenchEnvironment, _tool.__name__, _tool)

TOOLS: tuple[str, ...] = tuple(tool_names(WorkbenchEnvironment))


def gold_problems(task: Mapping[str, Any]) -> list[str]:
    """Why a task's gold calls cannot be replayed here: unknown tools, or calls that fail on
    the databases (e.g. an id our copy lacks). Raises ``DatabaseMissingError`` without them."""
    environment = WorkbenchEnvironment()
    environment._state, environment._directory = load_database(task.get("database") or database_dir())
    problems = []
    for call in task.get("ground_truth", []):
        observation = call_tool(environment, call.get("name"), call.get("arguments", {}))
        if call.get("name") not in TOOLS:
            problems.append(f"tool {call.get('name')!r} is not emulated")
        elif not environment._calls[-1].ok:
            problems.append(f"{call.get('name')} fails: {observation}")
    return problems
