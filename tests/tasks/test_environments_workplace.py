"""Workplace environment: scripted episodes, the all-calls-must-match rule, hostile arguments."""

from __future__ import annotations

import copy
import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.environments import (
    NO_ENVIRONMENT,
    NoToolsEnvironment,
    UnknownEnvironmentError,
    WorkplaceEnvironment,
    call_tool,
    environment_factories,
    environment_rewards,
    generate_workplace_tasks,
    get_environment_class,
    tool_names,
)
from tasks.schema import COLUMNS, reference_of
from verifiers import Status, verify
from verifiers.tool_call_parsing import render_tool_calls
from verifiers.verdict import MAX_DETAILS_CHARS

ROWS = {d: generate_workplace_tasks(40, seed=3, difficulty=d) for d in (1, 2, 3, 4)}
ALL_ROWS = [row for rows in ROWS.values() for row in rows]
TOOLS = tool_names(WorkplaceEnvironment)


def gold(row: dict[str, Any]) -> list[dict[str, Any]]:
    return reference_of(row)["task"]["calls"]


def run_episode(row: dict[str, Any], calls: list[dict[str, Any]]) -> float | None:
    """Play ``calls`` the way TRL's tool loop does: reset with the row, then call the methods."""
    env = WorkplaceEnvironment()
    env.reset(**{k: v for k, v in row.items() if k != "environment"})
    for call in calls:
        observation = getattr(env, call["name"])(**call["arguments"])
        assert isinstance(observation, str)
    (reward,) = environment_rewards([env])
    return reward


def test_rows_are_canonical_and_short() -> None:
    for difficulty, rows in ROWS.items():
        for row in rows:
            assert tuple(row) == COLUMNS
            assert (row["domain"], row["verifier"], row["environment"]) == (
                "agent",
                "workplace",
                "workplace",
            )
            assert len(gold(row)) == {1: 1, 2: 2, 3: 2, 4: 3}[difficulty]
        if difficulty == 1:  # a tiny character-level model must be able to learn these
            assert max(len(r["prompt"][0]["content"]) for r in rows) <= 24
            assert max(len(render_tool_calls(gold(r))) for r in rows) <= 110
    lookups = [gold(r)[0]["name"] for r in ROWS[3]]
    assert set(lookups) <= {"list_todos", "search_emails", "list_events"}


def test_generator_is_deterministic_by_seed() -> None:
    assert generate_workplace_tasks(40, seed=3, difficulty=2) == ROWS[2]
    assert generate_workplace_tasks(40, seed=4, difficulty=2) != ROWS[2]
    assert len({r["id"] for r in ALL_ROWS}) == len(ALL_ROWS)
    with pytest.raises(ValueError, match="difficulty"):
        generate_workplace_tasks(1, seed=0, difficulty=9)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4])
def test_scripted_reference_episode_scores_one(difficulty: int) -> None:
    assert [run_episode(row, gold(row)) for row in ROWS[difficulty]] == [1.0] * len(ROWS[difficulty])


def _wrong_value(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = copy.deepcopy(calls)
    args = calls[-1]["arguments"]
    key = next(k for k in ("body", "title", "day", "todo_id", "email_id", "event_id") if k in args)
    if key == "day":
        args[key] = "sun" if args[key] != "sun" else "mon"
    elif isinstance(args[key], int):
        args[key] = 1 if args[key] != 1 else 2
    else:
        args[key] += " now"
    return calls


BREAKERS = {
    "one wrong call": _wrong_value,
    "missing call": lambda calls: calls[:-1],
    "extra state-changing call": lambda calls: [
        *calls,
        {"name": "add_todo", "arguments": {"title": "x"}},
    ],
    "skipped lookup": lambda calls: [
        c for c in calls if c["name"] not in ("list_todos", "search_emails", "list_events")
    ],
    "calls out of order": lambda calls: calls[::-1],
}


@pytest.mark.parametrize("breaker", list(BREAKERS))
def test_broken_episodes_score_zero(breaker: str) -> None:
    scored = 0
    for row in ALL_ROWS:
        calls = BREAKERS[breaker](gold(row))
        if calls == gold(row) or (breaker == "calls out of order" and len(calls) < 2):
            continue
        if breaker == "skipped lookup" and len(calls) == len(gold(row)):
            continue
        scored += 1
        assert run_episode(row, calls) == 0.0, (breaker, row["prompt"], calls)
    assert scored >= 40


def test_tolerated_deviations_still_score_one() -> None:
    extra_lookup = {"name": "list_todos", "arguments": {}}
    failed_call = {"name": "delete_todo", "arguments": {"todo_id": 999}}
    for row in ALL_ROWS:
        calls = gold(row)
        assert run_episode(row, [extra_lookup, *calls]) == 1.0
        assert run_episode(row, [failed_call, *calls]) == 1.0
        shouted = copy.deepcopy(calls)
        for call in shouted:
            call["arguments"] = {k: v.upper() if isinstance(v, str) else v for k, v in call["arguments"].items()}
        assert run_episode(row, shouted) == 1.0


HOSTILE = [
    ("send_email", {"to": 5, "body": "hi"}),
    ("send_email", {"to": "bob"}),
    ("send_email", {"to": "nobody", "body": "hi"}),
    ("send_email", {"to": "bob", "body": "x" * 1_000_000}),
    ("send_email", {"to": "bob", "body": "hi", "cc": "ann"}),
    ("add_todo", {"title": None}),
    ("add_todo", {"title": ["a"]}),
    ("add_todo", {"title": "   "}),
    ("complete_todo", {"todo_id": "1"}),
    ("complete_todo", {"todo_id": True}),
    ("complete_todo", {"todo_id": 10**30}),
    ("complete_todo", {"todo_id": -1}),
    ("add_event", {"title": "gym", "day": "someday"}),
    ("move_event", {"event_id": 1.5, "day": "mon"}),
    ("reply_email", {"email_id": {"id": 1}, "body": "ok"}),
    ("add_contact", {"name": "zed", "email": "no-at-sign"}),
    ("delete_contact", {"name": "\x00\uffff"}),
    ("list_events", {"day": None}),
    ("rm_rf", {"path": "/"}),
    ("reset", {}),
    ("_load", {"state": {}}),
    ("__init__", {}),
    (None, {}),
    ("list_todos", ["not", "an", "object"]),
    ("list_todos", {1: 2}),
    ("list_todos", {"self": 1}),  # once a TypeError out of the guard: an error verdict
    ("send_email", {"self": None, "to": "bob", "body": "hi"}),
]


@pytest.mark.parametrize(("name", "arguments"), HOSTILE)
def test_hostile_arguments_give_error_observation(name: Any, arguments: Any) -> None:
    row = ROWS[3][0]
    env = WorkplaceEnvironment()
    env.reset(**row)
    before = env._snapshot()
    observation = call_tool(env, name, arguments)
    assert observation.startswith("error: ") and len(observation) <= 320
    assert env._snapshot() == before
    for call in gold(row):  # the episode can still be completed after the error
        call_tool(env, call["name"], call["arguments"])
    assert environment_rewards([env]) == [1.0]


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(TOOLS),
    arguments=st.dictionaries(
        st.sampled_from(["to", "body", "title", "day", "todo_id", "email_id", "event_id", "query", "x"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=20),
            st.lists(st.integers()),
        ),
        max_size=4,
    ),
)
def test_any_arguments_return_a_string(name: str, arguments: dict[str, Any]) -> None:
    env = WorkplaceEnvironment()
    env.reset(**ROWS[4][0])
    assert isinstance(getattr(env, name)(**arguments), str)


def test_instances_are_isolated_and_reset_cleanly() -> None:
    row = ROWS[1][0]
    reference = row["reference"]
    first, second = WorkplaceEnvironment(), WorkplaceEnvironment()
    first.reset(**row)
    second.reset(**row)
    first.add_todo(title="only in first")
    first.delete_contact(name=reference_of(row)["task"]["state"]["contacts"][0]["name"])
    assert first._snapshot() != second._snapshot()
    first.reset(**row)
    assert first._snapshot() == second._snapshot() and first._calls == []
    assert row["reference"] == reference  # playing never mutates the dataset row


def test_rows_of_other_domains_are_not_scored() -> None:
    env = WorkplaceEnvironment()
    env.reset(prompt=[{"role": "user", "content": "1+1"}], reference=json.dumps({"answer": "2"}))
    assert env.list_todos() == "none"
    env.reset()
    assert environment_rewards([env, NoToolsEnvironment()]) == [None, None]


TEXT_CASES = [
    (lambda calls: render_tool_calls(calls), Status.CORRECT),
    (lambda calls: "<think>plan</think>" + render_tool_calls(calls), Status.CORRECT),
    (lambda calls: json.dumps(calls), Status.CORRECT),
    (lambda calls: render_tool_calls(calls[:-1]), Status.WRONG),
    (lambda calls: "I would send it.", Status.WRONG),
    (lambda calls: "<tool_call>{broken</tool_call>", Status.FORMAT_ERROR),
    # dozens of extra writes: once named them all, past the verdict's details limit
    (
        lambda calls: render_tool_calls(calls + [{"name": "add_todo", "arguments": {"title": "x"}}] * 60),
        Status.WRONG,
    ),
]


@pytest.mark.parametrize(("render", "status"), TEXT_CASES)
def test_text_only_replay_verifier(render: Any, status: Status) -> None:
    for row in ROWS[1] + ROWS[2]:
        verdict = verify(render(gold(row)), reference_of(row), "workplace")
        assert verdict.status is status and len(verdict.details) <= MAX_DETAILS_CHARS


def test_unscorable_references_are_errors() -> None:
    assert verify("", {"environment": "nowhere", "task": {}}, "workplace").status is Status.ERROR
    assert verify("", {"environment": "workplace"}, "workplace").status is Status.ERROR


def test_trl_contract() -> None:
    """TRL exposes every public function of the class except reset/get_reward as a tool."""
    public = {n for n, _ in inspect.getmembers(WorkplaceEnvironment, inspect.isfunction) if not n.startswith("_")}
    assert public - {"reset"} == set(TOOLS) and len(TOOLS) >= 12
    assert not [n for n, _ in inspect.getmembers(NoToolsEnvironment, inspect.isfunction) if n != "reset"]
    from transformers.utils import get_json_schema

    env = WorkplaceEnvironment()
    for name in TOOLS:
        schema = get_json_schema(getattr(env, name))["function"]
        assert schema["name"] == name and schema["description"]
        params = inspect.signature(getattr(env, name)).parameters
        assert set(schema["parameters"]["properties"]) == set(params)


def test_environment_registry() -> None:
    factories = environment_factories()
    assert set(factories) == {"workbench", "workplace", "workplace_lite", NO_ENVIRONMENT}
    assert isinstance(factories["workplace"](), WorkplaceEnvironment)
    assert factories[""]().reset(prompt="x") is None
    with pytest.raises(UnknownEnvironmentError, match="known environments: workbench, workplace"):
        get_environment_class("kitchen")
