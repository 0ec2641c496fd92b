"""Fuzz: seeded multi-turn episodes through the ``workplace`` replay verifier in the pool.

References are the episodes the agent tasks emit: full workplace levels 1-4, lite levels
1-2, micro-suite agent rows, and crowded variants (hundreds of extra contacts, emails,
events and todos in every script, so listings overflow). An episode is a TRL message list:
assistant turns (calls in ``<tool_call>`` content, structured ``tool_calls`` or
``reasoning_content``) between tool turns holding the live environment's observations,
turned into text by ``rlvr.data.agent.rollout_text`` as the reward bridge does. Calls start from
the gold ones and are mutated: hostile values at the tools' limits (400/401-character
strings, 10**9, bools and floats for ids, surrogates), unknown or the other environment's
tools, arguments named ``self``, extra lookups and writes, dropped, repeated (64/65 calls),
reordered or re-cased calls, then damaged as text (cut, binary, megabytes, reasoning).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fuzz_support import MANY, binary_text, huge_text, run_and_check, timed_through_pool, with_think

import tasks.environments  # noqa: F401  (registers the workplace verifier)
from rlvr.data.agent import rollout_text
from tasks.environments import call_tool, get_environment_class, tool_names
from tasks.environments.workplace_lite import generate_lite_tasks
from tasks.environments.workplace_tasks import generate_workplace_tasks
from tasks.micro import agent as micro_agent
from tasks.schema import reference_of
from verifiers import get_verifier
from verifiers.pool.pool import VerifierPool

FUZZED = ("workplace",)
POOL_TIMEOUT_S = 10.0  # the pool's default: what the scorer runs the replay under
ALL_TOOLS = sorted({t for env in ("workplace", "workplace_lite") for t in tool_names(get_environment_class(env))})
HOSTILE_VALUES: list[Any] = [
    "x" * 400,
    "x" * 401,
    10**9 - 1,
    10**9,
    -(10**9),
    True,
    1.0,
    None,
    "",
    " ",
    "\ud800",
    "\x00",
    "BOB ",
    "mon\u200b",
    "ünïcödé",
    [1],
    {"a": 1},
    10**30,
    float("nan"),
    "<tool_call>",
]


def crowded(reference: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The reference with hundreds of extra state items (fresh ids and names: gold unchanged)."""
    reference = copy.deepcopy(reference)
    state = reference["task"]["state"]
    n = rng.choice([20, 200, 600])
    scripts = ["zed", "ζήτα", "зет", "ゼット", "זד", "ज़ेड", "😀"]
    state["contacts"] += [{"name": f"{rng.choice(scripts)}{i}", "email": f"c{i}@m.io", "phone": ""} for i in range(n)]
    for table, extra in (
        ("emails", lambda i: {"folder": "inbox", "from": "zz", "to": "me", "subject": f"s{i}", "body": "b"}),
        ("events", lambda i: {"title": f"e{i}", "day": "sun", "time": ""}),
        ("todos", lambda i: {"title": f"t{i}", "done": False}),
    ):
        start = max((item["id"] for item in state[table]), default=0) + 1
        state[table] += [{"id": start + i, **extra(i)} for i in range(n)]
    return reference


def references() -> list[tuple[str, dict[str, Any]]]:
    rows = [(f"full_d{d}", r) for d in range(1, 5) for r in generate_workplace_tasks(12, 7, d)]
    rows += [(f"lite_d{d}", r) for d in (1, 2) for r in generate_lite_tasks(12, 7, d)]
    rows += [("micro_agent", r) for r in micro_agent.generate(16, seed=5)]
    out = [(label, reference_of(row)) for label, row in rows]
    rng = random.Random(0)
    out += [("crowded", crowded(ref, rng)) for _, ref in rng.sample(out, 12)]
    return out


REFERENCES = references()


def mutate(rng: random.Random, calls: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """A mutated copy of the gold calls (items may no longer be calls at all)."""
    calls = [{"name": c["name"], "arguments": dict(c.get("arguments") or {})} for c in calls]
    kind = rng.choice(["right", "right", "value", "value", "tool", "extra", "shape", "case"])
    if kind == "value" and calls:
        call = rng.choice(calls)
        key = rng.choice([*call["arguments"], "self", "unknown"])
        call["arguments"][key] = rng.choice(HOSTILE_VALUES)
    elif kind == "tool" and calls:
        i = rng.randrange(len(calls))
        calls[i] = dict(calls[i], name=rng.choice([*ALL_TOOLS, "reset", "_load", "", 5, None]))
    elif kind == "extra":
        extra = rng.choice(
            [
                {"name": "list_todos", "arguments": {}},
                {"name": "add_todo", "arguments": {"title": "x"}},
                {"name": "search_emails", "arguments": {"query": ""}},
            ]
        )
        calls.insert(rng.randint(0, len(calls)), extra)
    elif kind == "shape":
        calls = rng.choice([[], calls[:-1], calls * 2, (calls or [{}]) * 64, (calls or [{}]) * 65])
        calls = calls[:65] if len(calls) > 65 else calls
        if rng.random() < 0.3:
            rng.shuffle(calls)
    elif kind == "case":
        for call in calls:
            call["arguments"] = {
                k: f"  {v.upper()} " if isinstance(v, str) else v for k, v in call["arguments"].items()
            }
    return kind, calls


def _structured(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    return {"type": "function", "function": {"name": call.get("name"), "arguments": call.get("arguments")}}


def episode(rng: random.Random, reference: dict[str, Any], calls: list[Any]) -> list[dict[str, Any]]:
    """Calls spread over assistant turns, each followed by the live environment's observations."""
    env = get_environment_class(reference["environment"])()
    env.reset(reference=json.dumps(reference))
    messages: list[dict[str, Any]] = []
    i = 0
    while i < len(calls) or not messages:
        size = rng.randint(1, 4)
        turn, i = calls[i : i + size], i + size
        # reasoning only opens the first turn: graded text starts after the last </think>
        form = rng.randrange(3) if not messages else rng.randrange(2)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": rng.choice(["", "Let me do that."]),
        }
        if form == 0:
            blocks = [f"<tool_call>{json.dumps(c, ensure_ascii=rng.random() < 0.5)}</tool_call>" for c in turn]
            message["content"] += "\n".join(blocks)
        else:
            message["tool_calls"] = [_structured(c) for c in turn]
        if form == 2:
            message["reasoning_content"] = rng.choice(["plan: " + ", ".join(str(c)[:40] for c in turn), "<think>", ""])
        messages.append(message)
        for call in turn:
            if isinstance(call, dict) and isinstance(call.get("arguments"), dict):
                observation = call_tool(env, call.get("name"), call["arguments"])
                messages.append({"role": "tool", "name": str(call.get("name")), "content": observation})
    if rng.random() < 0.5:
        messages.append({"role": "assistant", "content": "All done."})
    return messages


def corrupt(rng: random.Random, text: str) -> str:
    """Text-level damage after the episode is rendered."""
    draw = rng.randrange(10)
    if draw == 0 and text:
        return text[: rng.randrange(len(text))]
    if draw == 1:
        return with_think(rng, text)
    if draw == 2:
        return binary_text(rng, rng.randint(1, 2000)) + text
    if draw == 3 and rng.random() < 0.2:
        return rng.choice([huge_text(rng) + text, text + huge_text(rng)])
    if draw == 4:
        return text.replace("</tool_call>", "", 1)
    return text


def generate(seed: int, count: int) -> Iterator[tuple[str, dict, Any, str]]:
    """``count`` seeded (completion text, reference, verifier, label) items, made as they
    are used (megabyte texts never pile up)."""
    rng = random.Random(seed)
    verifier = get_verifier("workplace")
    for _ in range(count):
        label, reference = rng.choice(REFERENCES)
        kind, calls = mutate(rng, reference["task"]["calls"])
        text = corrupt(rng, rollout_text(episode(rng, reference, calls)))
        yield text, reference, verifier, f"{label}/{kind}"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(2, timeout_s=POOL_TIMEOUT_S) as p:
        yield p


def fuzz(pool: VerifierPool, seed: int, count: int):
    items = generate(seed, count)
    summary = run_and_check(lambda: timed_through_pool(pool, items), POOL_TIMEOUT_S, f"workplace {seed}")
    # at most 64 calls on a few hundred items: a timeout here is a hang
    assert summary.statuses["timeout"] == 0, summary.by_label
    return summary


def test_gold_episodes_score_correct(pool):
    """Every reference's gold calls, as one multi-turn episode, are correct (the anchor)."""
    rng, verifier = random.Random(0), get_verifier("workplace")  # objects travel, as the scorer's
    items = [(rollout_text(episode(rng, ref, ref["task"]["calls"])), ref, verifier) for _, ref in REFERENCES]
    verdicts = pool.verify_batch(items)
    assert [v.status.value for v in verdicts] == ["correct"] * len(items), verdicts


def test_generated_items_cover_every_kind():
    labels = [label for *_, label in generate(0, 500)]
    assert {label.split("/")[0] for label in labels} == {label for label, _ in REFERENCES}
    assert {label.split("/")[1] for label in labels} == {"right", "value", "tool", "extra", "shape", "case"}


def test_fuzz_workplace_slice(pool):
    summary = fuzz(pool, seed=0, count=300)
    for status in ("correct", "wrong", "format_error"):
        assert summary.statuses[status] > 0, summary.statuses


@pytest.mark.slow
def test_fuzz_workplace_many(pool):
    summary = fuzz(pool, seed=1, count=MANY)
    for status in ("correct", "wrong", "format_error"):
        assert summary.statuses[status] > 0, summary.statuses
