"""Lite workplace: its short tool surface, episode scoring, prompt budget and micro rows."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from tasks import micro
from tasks.environments import (
    call_tool,
    environment_factories,
    environment_rewards,
    get_environment_class,
    tool_names,
)
from tasks.environments.workplace_lite import (
    LEVELS,
    NAME,
    WorkplaceLiteEnvironment,
    generate_lite_tasks,
)
from tasks.schema import reference_of
from verifiers import ReasoningFormat, Status, verify

GATED = ReasoningFormat(strip_think=True, format_gate=True)
ROWS = {d: generate_lite_tasks(40, seed=1, difficulty=d) for d in LEVELS}
ALL_ROWS = [row for rows in ROWS.values() for row in rows]
# Whole rendered prompt (tool listing + request + generation prompt), in tiny-tokenizer tokens.
PROMPT_BUDGET = {1: 150, 2: 170}


def gold(row: dict[str, Any]) -> list[dict[str, Any]]:
    return reference_of(row)["task"]["calls"]


def state(row: dict[str, Any]) -> dict[str, Any]:
    return reference_of(row)["task"]["state"]


def run_episode(row: dict[str, Any], calls: list[dict[str, Any]]) -> float | None:
    """Play ``calls`` as TRL's tool loop does: reset with the row, then call the methods."""
    env = WorkplaceLiteEnvironment()
    env.reset(**{k: v for k, v in row.items() if k != "environment"})
    for call in calls:
        assert isinstance(call_tool(env, call["name"], call["arguments"]), str)
    (reward,) = environment_rewards([env])
    return reward


def contact(row: dict[str, Any]) -> str:
    return state(row)["contacts"][0]["name"]


def first(step: str, level: int = 1) -> dict[str, Any]:
    return next(r for r in ROWS[level] if gold(r)[0]["name"] == step)


def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool_name, "arguments": arguments}


# -- the tool surface TRL sees --


def test_tools_are_few_short_and_the_only_public_methods() -> None:
    tools = tool_names(WorkplaceLiteEnvironment)
    assert tools == ["contact", "done", "email", "todo"]
    public = [n for n, _ in inspect.getmembers(WorkplaceLiteEnvironment, inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == sorted([*tools, "reset"])  # TRL exposes every public function
    assert get_environment_class(NAME) is WorkplaceLiteEnvironment
    assert set(environment_factories([NAME])) == {NAME, ""}


# -- episodes --


def test_gold_episodes_score_one() -> None:
    assert all(run_episode(row, gold(row)) == 1.0 for row in ALL_ROWS)


@pytest.mark.parametrize(
    ("make_calls", "expected"),
    [
        (lambda row: [], 0.0),  # nothing done
        (lambda row: gold(row)[:-1], 0.0),  # a call missing
        (lambda row: gold(row) + [call("todo", title="zzz")], 0.0),  # an extra state change
        (lambda row: gold(row) + [call("email", to=contact(row), body="hi")], 0.0),  # extra
        (lambda row: list(reversed(gold(row))), 0.0),  # order of state changes counts
        (lambda row: [call("send_email", to="ann", body="hi")] + gold(row), 1.0),  # unknown tool
        (lambda row: [call("done", title="no such todo")] + gold(row), 1.0),  # failed call
        (lambda row: [call("email", to="ann")] + gold(row), 1.0),  # missing argument
        (lambda row: [call("todo", title="x" * 5000)] + gold(row), 1.0),  # hostile size
    ],
)
def test_episode_rule_on_two_call_rows(make_calls, expected: float) -> None:
    for row in ROWS[2]:
        assert run_episode(row, make_calls(row)) == expected, make_calls(row)


@pytest.mark.parametrize(
    ("step", "wrong"),
    [
        ("email", lambda a: {**a, "body": a["body"] + "!"}),
        ("email", lambda a: {**a, "to": "zed"}),  # not a saved contact: the call fails
        ("contact", lambda a: {**a, "email": "no-at-sign"}),
        ("todo", lambda a: {"title": a["title"] + " now"}),
        ("done", lambda a: {"title": "buy " + a["title"]}),
    ],
)
def test_wrong_arguments_score_zero(step: str, wrong) -> None:
    row = first(step)
    (want,) = gold(row)
    assert run_episode(row, [call(step, **wrong(want["arguments"]))]) == 0.0
    assert run_episode(row, [call(step, **want["arguments"])]) == 1.0


def test_case_and_spacing_of_arguments_do_not_count() -> None:
    row = first("todo")
    title = gold(row)[0]["arguments"]["title"]
    assert run_episode(row, [call("todo", title="  " + title.upper())]) == 1.0


def test_tools_change_the_shared_workplace_state() -> None:
    row = first("contact")
    env = WorkplaceLiteEnvironment()
    env.reset(**row)
    args = gold(row)[0]["arguments"]
    assert env.contact(**args).startswith("added contact")
    assert env.contact(**args).startswith("error: ")  # duplicate, reported not raised
    assert env.email(to=args["name"], body="hi").startswith("sent email")
    todo = state(row)["todos"][0]["title"]
    assert env.done(title=todo) == "completed todo 1"
    assert env.done(title=7).startswith("error: ")  # type: ignore[arg-type]
    assert env.todo(title=" ").startswith("error: ")


def test_rows_of_other_environments_load_no_task() -> None:
    full = micro.generate("agent", 1, seed=0, difficulty=3)[0]
    env = WorkplaceLiteEnvironment()
    env.reset(**full)
    assert environment_rewards([env]) == [None]
    env.reset(reference="not json")
    assert environment_rewards([env]) == [None]


# -- rows and the micro-suite --


def test_rows_are_canonical_deterministic_and_varied() -> None:
    for level, rows in ROWS.items():
        assert rows == generate_lite_tasks(40, seed=1, difficulty=level)
        assert rows != generate_lite_tasks(40, seed=2, difficulty=level)
        assert len({r["prompt"][0]["content"] for r in rows}) > 20
        for row in rows:
            assert (row["domain"], row["verifier"], row["environment"]) == (
                "agent",
                "workplace",
                NAME,
            )
            assert reference_of(row)["environment"] == NAME
            assert len(gold(row)) == level
            assert len(row["prompt"][0]["content"]) <= 20 * level
    with pytest.raises(ValueError, match="difficulty"):
        generate_lite_tasks(1, seed=0, difficulty=3)


def test_micro_levels_use_lite_then_full_workplace() -> None:
    for level, environment in [(1, NAME), (2, NAME), (3, "workplace"), (4, "workplace")]:
        rows = micro.generate("agent", 6, seed=0, difficulty=level)
        assert {r["environment"] for r in rows} == {environment}
        assert {reference_of(r)["environment"] for r in rows} == {environment}


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_micro_demonstrations_score_one_through_replay(split: str) -> None:
    rows = micro.generate("agent", 24, seed=3, difficulty=[1, 2], split=split)
    for row in rows:
        demo = micro.demonstration(row)
        assert demo.count("<tool_call>") == len(gold(row))
        assert len(demo) <= 20 + 100 * len(gold(row)), demo
        assert verify(demo, reference_of(row), "workplace", GATED).status is Status.CORRECT
        broken = demo.replace(json.dumps(gold(row)[-1]["name"]), '"todo"', 1)
        if broken != demo:
            assert verify(broken, reference_of(row), "workplace").status is not Status.CORRECT


def test_micro_rows_are_deterministic_and_split_by_prompt() -> None:
    train = micro.generate("agent", 40, seed=4, difficulty=[1, 2])
    held = micro.generate("agent", 20, seed=4, difficulty=[1, 2], split="heldout")
    assert train == micro.generate("agent", 40, seed=4, difficulty=[1, 2])
    user = lambda r: r["prompt"][-1]["content"]  # noqa: E731
    assert not {user(r) for r in train} & {user(r) for r in held}


def values_in(row: dict[str, Any]) -> set[str]:
    """Every argument value the gold calls copy from the request, e-mail addresses as names."""
    values = {str(v) for call in gold(row) for v in call["arguments"].values()}
    return {v.removesuffix("@x.io") for v in values}


def test_micro_heldout_requests_use_values_no_training_request_contains() -> None:
    train = [r for s in range(3) for r in micro.generate("agent", 200, s, [1, 2])]
    held = micro.generate("agent", 64, seed=0, difficulty=[1, 2], split="heldout")
    seen = set().union(*(values_in(r) for r in train))
    for row in held:
        assert values_in(row) and not values_in(row) & seen, row["prompt"][-1]["content"]
        user = row["prompt"][-1]["content"]
        assert all(value in user for value in values_in(row))  # copyable from the request
    assert len(seen) > 300  # enough distinct values that copying, not recall, is what fits


# -- prompt length as the tiny model sees it --


@pytest.fixture(scope="module")
def tokenizer():
    from rlvr.models import tiny as tiny_model

    return tiny_model.build_tokenizer()


@pytest.mark.parametrize("level", LEVELS)
def test_prompts_fit_the_budget_as_trl_renders_them(tokenizer, level: int) -> None:
    from rlvr.data.agent import training_row

    env = WorkplaceLiteEnvironment()
    tools = [getattr(env, name) for name in tool_names(WorkplaceLiteEnvironment)]
    rows = micro.generate("agent", 16, seed=5, difficulty=level)
    lengths = []
    for row in rows:
        text_only = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, return_dict=False)
        with_tools = tokenizer.apply_chat_template(
            training_row(row)["prompt"], tools=tools, add_generation_prompt=True, return_dict=False
        )
        assert text_only == with_tools  # SFT and GRPO prompts are the same tokens
        lengths.append(len(with_tools))
    assert max(lengths) <= PROMPT_BUDGET[level], lengths
