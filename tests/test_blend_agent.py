"""The blend's agent slice: workbench rows load, replay to NeMo Gym's reward, and train in GRPO."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.environments import WorkbenchEnvironment, call_tool, get_environment_class
from tasks.environments.workbench import TOOLS
from tasks.registry import load_task_rows
from tasks.schema import reference_of
from verifiers import Status, verify

REPO = Path(__file__).resolve().parents[1]
BLEND = REPO / "tests" / "fixtures" / "hub" / "nemotron_blend.jsonl"
WORKBENCH = REPO / "tests" / "fixtures" / "workbench" / "csv_data"


@pytest.fixture(autouse=True)
def tables(monkeypatch) -> None:
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(WORKBENCH))


def rows() -> list[dict]:
    return load_task_rows("nemotron_agent", data_files=str(BLEND))


def calls_text(calls: list[dict]) -> str:
    return "".join(f"<tool_call>{json.dumps(c)}</tool_call>\n" for c in calls)


def episode(row: dict, calls: list[dict]) -> WorkbenchEnvironment:
    env = get_environment_class(row["environment"])()
    env.reset(**row)
    for call in calls:
        call_tool(env, call["name"], call["arguments"])
    return env


def test_rows_name_a_registered_environment_and_verifier() -> None:
    loaded = rows()
    assert len(loaded) == 7
    assert {(r["environment"], r["verifier"]) for r in loaded} == {("workbench", "workplace")}
    assert len(TOOLS) == 27  # NeMo Gym's workplace assistant: 27 tools over 6 toolkits
    raw = [json.loads(line) for line in BLEND.read_text().splitlines()]
    kept = {r["id"].rsplit(":", 1)[1] for r in loaded}
    for record in raw:
        if record["uuid"] in kept:
            assert {t["name"] for t in record["responses_create_params"]["tools"]} == set(TOOLS)


def test_gold_calls_replay_to_full_reward_live_and_from_text() -> None:
    for row in rows():
        gold = reference_of(row)["task"]["ground_truth"]
        assert episode(row, gold)._verdict().status is Status.CORRECT, row["id"]
        assert verify(calls_text(gold), reference_of(row), row["verifier"]).score == 1.0


def _wrong(call: dict) -> dict:
    """The same call with one argument value changed."""
    arguments = dict(call["arguments"])
    keys = ("body", "new_value", "task_name", "plot_type", "event_name")
    key = next(k for k in keys if k in arguments)
    arguments[key] = "line" if key == "plot_type" else "something else"
    return {**call, "arguments": arguments}


@pytest.mark.parametrize(
    "edit",
    [
        lambda gold: [],  # nothing done
        lambda gold: gold[:-1] + [_wrong(gold[-1])],  # one wrong value
        lambda gold: gold + [{"name": "email_delete_email", "arguments": {"email_id": "00000002"}}],
    ],
    ids=["no_calls", "wrong_value", "extra_change"],
)
def test_wrong_episodes_score_lower(edit) -> None:
    for row in rows():
        gold = reference_of(row)["task"]["ground_truth"]
        verdict = episode(row, edit(gold))._verdict()
        assert verdict.status is Status.WRONG and verdict.score == 0.0, (row["id"], verdict)
        assert verify(calls_text(edit(gold)), reference_of(row), "workplace").score == 0.0


def test_lookups_and_failed_calls_do_not_count_case_does_not_matter() -> None:
    """NeMo Gym scores the final state only, strings case-insensitive outside status/list/board."""
    row = next(r for r in rows() if r["id"].endswith(":w-3"))  # rename the last event on Dec 1
    lookups = [
        {
            "name": "calendar_search_events",
            "arguments": {"time_min": "2023-12-01 00:00:00", "time_max": "2023-12-01 23:59:59"},
        },
        {
            "name": "calendar_update_event",
            "arguments": {"event_id": "13", "field": "event_name", "new_value": "x"},
        },  # bad id: fails
        {
            "name": "calendar_update_event",
            "arguments": {"event_id": "00000013", "field": "event_name", "new_value": "BUDGET review"},
        },
    ]
    env = episode(row, lookups)
    assert json.loads(call_tool(env, "calendar_search_events", {"query": "budget"}))["events"]
    assert [c.ok for c in env._calls[:3]] == [True, False, True]
    assert env._verdict().status is Status.CORRECT
    crm = next(r for r in rows() if r["id"].endswith(":w-4"))
    gold = reference_of(crm)["task"]["ground_truth"]
    upper = [{**c, "arguments": {**c["arguments"], "field": "status", "new_value": "Won"}} for c in gold]
    lower = [{**c, "arguments": {**c["arguments"], "field": "status", "new_value": "won"}} for c in gold]
    assert "error" in call_tool(episode(crm, []), lower[0]["name"], lower[0]["arguments"])
    assert episode(crm, upper)._verdict().status is Status.WRONG  # right tool, wrong field


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("email_send_email", {"recipient": "nobody", "subject": "s", "body": "b"}, "error: Invalid"),
        ("email_send_email", {"recipient": "a@b.co"}, "error: email_send_email: missing"),
        (
            "calendar_create_event",
            {"event_name": "x", "participant_email": "a@b.co", "event_start": "tomorrow", "duration": "30"},
            "error: Invalid",
        ),
        ("calendar_search_events", {"page": "two"}, "error: calendar_search_events: argument"),
        (
            "project_management_create_task",
            {
                "task_name": "x",
                "assigned_to_email": "ghost@atlas.com",
                "list_name": "Backlog",
                "due_date": "2023-12-01",
                "board": "Design",
            },
            "error: Assignee email not valid",
        ),
        (
            "analytics_create_plot",
            {"time_min": "2023-11-01", "time_max": "2023-11-30", "value_to_plot": "revenue", "plot_type": "bar"},
            "error: Value",
        ),
        ("email_search_emails", {"query": "x" * 10_000}, "error: email_search_emails: argument"),
        ("shell", {"cmd": "rm -rf /"}, "error: unknown tool"),
    ],
)
def test_bad_calls_are_observations_and_change_nothing(name, arguments, expected) -> None:
    row = rows()[0]
    env = episode(row, [])
    before = json.dumps(env._state, sort_keys=True, default=str)
    assert call_tool(env, name, arguments).startswith(expected)
    assert json.dumps(env._state, sort_keys=True, default=str) == before


def test_lookups_answer_from_the_tables() -> None:
    env = episode(rows()[0], [])
    assert json.loads(call_tool(env, "company_directory_find_email_address", {"name": "RAJ"})) == [
        "raj.patel@atlas.com"
    ]
    found = json.loads(call_tool(env, "email_search_emails", {"query": "carlos task update"}))
    assert [e["email_id"] for e in found["emails"]] == ["00000004", "00000001"]  # newest first
    visits = json.loads(call_tool(env, "analytics_traffic_source_count", {"traffic_source": "direct"}))
    assert visits == {"2023-11-27": 1, "2023-11-28": 0, "2023-11-29": 1, "2023-11-30": 0}
    assert (
        call_tool(env, "email_send_email", {"recipient": "Aisha.Chen@atlas.com", "subject": "s", "body": "b"})
        == "Email sent successfully."
    )
    assert env._state["emails"][-1]["email_id"] == "6"  # NeMo Gym: max id + 1, unpadded
    assert (
        call_tool(
            env,
            "calendar_create_event",
            {"event_name": "x", "participant_email": "a@b.co", "event_start": "2023-12-05 10:00:00", "duration": "30"},
        )
        == "00000015"
    )


@pytest.mark.slow
def test_two_grpo_steps_on_the_blend_agent_rows(tmp_path, rlvr_cache, sft_checkpoint) -> None:
    """``python -m rlvr.train domains=[m2rl/agent]`` on the fixture: TRL's environment_factory
    routes every row to the workbench, and each rollout is scored from its live episode."""
    env = {
        **os.environ,
        "RLVR_CACHE": str(rlvr_cache),
        "RLVR_WORKBENCH_DATA": str(WORKBENCH),
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "disabled",
    }
    args = [
        "experiment=smoke",
        "logger=none",
        "sft=none",
        "domains=[m2rl/agent]",
        "domains.agent.eval_tasks=[]",
        f"domains.agent.data_files=[{BLEND}]",
        f"init_from={sft_checkpoint}",
        "trainer.max_steps=2",
        "trainer.save_steps=2",
        "algo.num_generations=2",
        "algo.prompts_per_step=2",
        "algo.max_completion_length=32",
        "eval.in_run=false",
        f"paths.output_root={tmp_path}",
        f"paths.cache_dir={tmp_path}/cache",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "rlvr.train", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "environment_factory for ['workbench']" in result.stdout + result.stderr
    (run,) = [p for p in (tmp_path / "smoke").iterdir() if p.is_dir()]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "rewards/reward_agent/mean" in m]
    assert [m["step"] for m in steps] == [1, 2]
    assert all(m["agent/count"] == 4 and m["agent/verifier_error_rate"] == 0 for m in steps)
    assert (run / "final" / "config.json").exists()
