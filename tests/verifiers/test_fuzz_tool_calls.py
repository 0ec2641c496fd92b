"""Fuzz: seeded generated completions through the ``tool_calls`` verifier in the worker pool.

References are the kinds the agent tasks emit: BFCL simple, multiple, parallel,
parallel_multiple and irrelevance items (nested, array, float, boolean and dotted-name
functions), xLAM rows (``ground_truth`` of ``tasks.adapters.tool_calls``) and the micro agent
tasks' gold calls over the workplace tools (also replayed by their own ``workplace`` verifier,
which parses the same way). Completions start from a right answer (``tasks.bfcl.gold_calls``)
and are mutated: hostile argument values (huge integers, NaN/Infinity, unicode, objects where
strings belong), wrong types (lists for objects, numbers for names), thousands of nesting
levels, too many calls, cut or nested tags, eight call formats, megabytes and binary junk.
"""

from __future__ import annotations

import inspect
import json
import random
import typing
from typing import Any

import pytest
from fuzz_support import (
    binary_text,
    huge_text,
    run_and_check,
    timed_through_pool,
    unicode_text,
    with_think,
)

from tasks.adapters.tool_calls import ground_truth, xlam_function
from tasks.bfcl import gold_calls
from tasks.environments import get_environment_class, tool_names
from tasks.environments.scoring import EnvironmentReplayVerifier
from tasks.micro import agent as micro_agent
from tasks.schema import reference_of
from verifiers import get_verifier
from verifiers.pool.pool import VerifierPool

FUZZED = ("tool_calls",)  # workplace replays here too; its own module fuzzes episodes
POOL_TIMEOUT_S = 5.0
SCHEMA_TYPES = {str: "string", int: "integer", bool: "boolean", float: "float"}


def fn(name: str, required: list[str], /, **props: dict) -> dict[str, Any]:
    params = {"type": "dict", "properties": props, "required": required}
    return {"name": name, "description": f"{name} tool", "parameters": params}


AREA = fn(
    "calc_area",
    ["base", "height"],
    base={"type": "integer"},
    height={"type": "float"},
    unit={"type": "string"},
)
FACT = fn("math.factorial", ["n"], n={"type": "integer"})
HOTEL = fn(
    "hotel.book",
    ["city", "nights"],
    city={"type": "string"},
    nights={"type": "integer"},
    guests={"type": "array", "items": {"type": "string"}},
    prefs={"type": "dict", "properties": {"smoking": {"type": "boolean"}}},
    budget={"type": "tuple", "items": {"type": "float"}},
    note={"type": "any"},
)
BFCL = [
    ("simple", [AREA], [{"calc_area": {"base": [10], "height": [5.0], "unit": ["cm", ""]}}], False),
    ("multiple", [AREA, FACT, HOTEL], [{"factorial": {"n": [5]}}], False),
    ("parallel", [FACT], [{"math.factorial": {"n": [3]}}, {"math.factorial": {"n": [4]}}], True),
    (
        "parallel_multiple",
        [AREA, HOTEL, FACT],
        [
            {
                "hotel.book": {
                    "city": ["Paris", "paris"],
                    "nights": [2],
                    "guests": [["Ann", "Bo"], ""],
                    "prefs": [{"smoking": [False, ""]}, ""],
                    "budget": [[100.0, 200.0], ""],
                    "note": ["", "late"],
                }
            },
            {"calc_area": {"base": [3], "height": [4.5], "unit": [""]}},
            {"math.factorial": {"n": [7]}},
        ],
        True,
    ),
    ("irrelevance", [AREA, FACT], [], False),
]
XLAM_TOOLS = [
    {
        "name": "get_weather",
        "parameters": {
            "city": {"type": "str", "description": "city"},
            "days": {"type": "int, optional", "default": 1},
        },
    },
    {"name": "convert", "parameters": {"amount": {"type": "float"}, "to": {"type": "str"}}},
]
XLAM_CALLS = [
    {"name": "get_weather", "arguments": {"city": "Oslo"}},
    {"name": "convert", "arguments": {"amount": 2.5, "to": "EUR"}},
]


def workplace_functions(environment: str) -> list[dict[str, Any]]:
    """The environment's tools as JSON-schema function docs (what a BFCL-style prompt lists)."""
    env_class = get_environment_class(environment)
    docs = []
    for name in tool_names(env_class):
        method = getattr(env_class, name)
        hints = typing.get_type_hints(method)
        params = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
        props = {p.name: {"type": SCHEMA_TYPES.get(hints.get(p.name), "any")} for p in params}
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        docs.append(fn(name, required, **props))
    return docs


def references() -> list[tuple[str, dict, list[dict], Any]]:
    """(label, reference, one right list of calls, verifier) for every reference kind."""
    out = []
    for label, functions, truth, parallel in BFCL:
        ref = {"functions": functions, "ground_truth": truth, "parallel": parallel}
        out.append((f"bfcl_{label}", ref, gold_calls(truth, functions), "tool_calls"))
    functions = [xlam_function(t) for t in XLAM_TOOLS]
    ref = {"functions": functions, "ground_truth": ground_truth(XLAM_CALLS, functions)}
    out.append(("xlam", dict(ref, parallel=True), XLAM_CALLS, "tool_calls"))
    for row in micro_agent.generate(8, seed=3):
        ref = reference_of(row)
        calls = ref["task"]["calls"]
        functions = workplace_functions(ref["environment"])
        as_bfcl = {"functions": functions, "ground_truth": ground_truth(calls, functions)}
        out.append(("micro_agent", dict(as_bfcl, parallel=False), calls, "tool_calls"))
        out.append(("workplace", ref, calls, EnvironmentReplayVerifier()))
    return out


REFERENCES = references()
HUGE_INT = "9" * 5000  # past Python's int digit limit: spliced into JSON text, not dumped
HOSTILE_VALUES: list[Any] = [
    10**100,
    -(2**63),
    float("nan"),
    float("inf"),
    -0.0,
    1e308,
    True,
    None,
    "",
    "ü" * 50,
    "\ud800",
    "\x00",
    "a" * 100_000,
    {"nested": {"deep": ["x"]}},
    [],
    [[1]],
    {"": None},
    "'; DROP TABLE",
    "Paris" + "\u200b",
    3.0000000001,
    "1e999",
    "HUGE_INT",
    "DEEP",
]


def mutate(rng: random.Random, calls: list[dict]) -> tuple[str, list[Any]]:
    """A mutated copy of the right calls (items may no longer be calls at all)."""
    calls = [{"name": c["name"], "arguments": dict(c.get("arguments") or {})} for c in calls]
    kind = rng.choice(["right", "right", "value", "value", "type", "shape", "extra", "shuffle"])
    if kind == "value" and calls:
        call = rng.choice(calls)
        key = rng.choice([*call["arguments"], "unknown_param"])
        call["arguments"][key] = rng.choice(HOSTILE_VALUES)
    elif kind == "type" and calls:
        i = rng.randrange(len(calls))
        bad = [5, None, ["f"], {"n": "f"}, "", " ", "f" * 10_000, "\ud800"]
        calls[i] = rng.choice(
            [
                dict(calls[i], name=rng.choice(bad)),
                dict(calls[i], arguments=rng.choice([[1, 2], "not json", 3, '{"a": ', None])),
                [calls[i]["name"], calls[i]["arguments"]],
                {"arguments": calls[i]["arguments"]},
                {"type": "function", "function": rng.choice(["f", [1], {"name": 1}])},
            ]
        )
    elif kind == "shape":
        calls = rng.choice([[], calls * rng.randint(2, 70), calls[:-1], [calls]])
    elif kind == "extra":
        calls.append({"name": "undocumented", "arguments": {"x": 1}})
    elif kind == "shuffle":
        rng.shuffle(calls)
    return kind, calls


def dumps(value: Any, rng: random.Random) -> str:
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    text = text.replace('"HUGE_INT"', HUGE_INT)
    depth = rng.choice([100, 3000, 20_000])
    return text.replace('"DEEP"', "[" * depth + "]" * depth).replace('"1e999"', "1e999")


def render(rng: random.Random, calls: list[Any], form: int | None = None) -> str:
    """The calls in one of the formats models write (or a broken variant of one)."""
    form = rng.randrange(9) if form is None else form
    if form == 0:  # Hermes/Qwen blocks
        return "\n".join(f"<tool_call>\n{dumps(c, rng)}\n</tool_call>" for c in calls)
    if form == 1:
        return "".join(f"<tool_call>{dumps(c, rng)}</tool_call>" for c in calls)
    if form == 2:
        return dumps(calls, rng)
    if form == 3:
        return f"```json\n{dumps(calls[0] if len(calls) == 1 else calls, rng)}\n```"
    if form == 4:  # OpenAI: arguments as a JSON string
        wrapped = [
            {"type": "function", "function": {"name": c.get("name"), "arguments": dumps(c.get("arguments"), rng)}}
            if isinstance(c, dict)
            else c
            for c in calls
        ]
        return dumps(wrapped, rng)
    if form == 5:  # a chat message list
        return dumps([{"role": "assistant", "content": "", "tool_calls": calls}], rng)
    if form == 6:  # "parameters" for "arguments"
        renamed = [
            {"name": c.get("name"), "parameters": c.get("arguments")} if isinstance(c, dict) else c for c in calls
        ]
        return "\n".join(f"<tool_call>{dumps(c, rng)}</tool_call>" for c in renamed)
    if form == 7:  # the last block cut: no closing tag (stop strings eat it)
        return "".join(f"<tool_call>{dumps(c, rng)}" for c in calls)
    return "I would call: " + " ".join(f"<tool_call>{dumps(c, rng)}</tool_call>" for c in calls)


def corrupt(rng: random.Random, text: str) -> str:
    """Text-level damage after rendering."""
    draw = rng.randrange(12)
    if draw == 0 and text:
        return text[: rng.randrange(len(text))]
    if draw == 1:
        return text.replace("</tool_call>", "<tool_call>", 1)
    if draw == 2:
        return "</tool_call>" + text
    if draw == 3:
        return with_think(rng, text)
    if draw == 4:
        return binary_text(rng, rng.randint(1, 2000)) + text
    if draw == 5:
        return unicode_text(rng, rng.randint(1, 500))
    if draw == 6 and rng.random() < 0.15:
        return rng.choice([huge_text(rng) + text, text + huge_text(rng)])
    if draw == 7:
        return "<tool_call>" * rng.randint(1, 100) + text + "}" * rng.randint(0, 5000)
    if draw == 8:
        return "```" + " " * rng.randint(1, 50_000) + text
    return text


def generate(seed: int, count: int) -> list[tuple[str, dict, Any, str]]:
    """``count`` seeded (completion, reference, verifier, label) items."""
    rng = random.Random(seed)
    built = {"tool_calls": get_verifier("tool_calls"), "partial": get_verifier("tool_calls", mode="partial")}
    items = []
    for _ in range(count):
        label, ref, calls, verifier = rng.choice(REFERENCES)
        if verifier == "tool_calls":
            verifier = built[rng.choice(["tool_calls", "partial"])]
        kind, mutated = mutate(rng, calls)
        items.append((corrupt(rng, render(rng, mutated)), ref, verifier, f"{label}/{kind}"))
    return items


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(2, timeout_s=POOL_TIMEOUT_S) as p:
        yield p


def fuzz(pool: VerifierPool, seed: int, count: int):
    items = generate(seed, count)
    summary = run_and_check(lambda: timed_through_pool(pool, items), POOL_TIMEOUT_S, f"tools {seed}")
    # parsing and matching are linear: a timeout here is a hang, not a slow answer
    assert summary.statuses["timeout"] == 0, summary.by_label
    return summary


def test_generated_items_cover_every_kind():
    labels = {label for *_, label in generate(0, 1000)}
    assert {label.split("/")[0] for label in labels} == {label for label, *_ in REFERENCES}
    assert {label.split("/")[1] for label in labels} == {"right", "value", "type", "shape", "extra", "shuffle"}


def test_right_answers_score_correct(pool):
    """The unmutated right answers are correct in every reference kind (the fuzzer's anchor)."""
    rng = random.Random(0)
    forms = [0, 1, 2, 4, 5, 6, 8]  # the well-formed ones (3 holds one call, 7 is cut)
    items = [(render(rng, calls, rng.choice(forms)), ref, v) for _, ref, calls, v in REFERENCES]
    verdicts = pool.verify_batch(items)
    assert [v.status.value for v in verdicts] == ["correct"] * len(items), verdicts


def test_fuzz_tool_calls_slice(pool):
    summary = fuzz(pool, seed=0, count=400)
    assert summary.statuses["correct"] > 0 and summary.statuses["format_error"] > 0


@pytest.mark.slow
def test_fuzz_tool_calls_many(pool):
    summary = fuzz(pool, seed=1, count=10_000)
    for status in ("correct", "wrong", "format_error"):
        assert summary.statuses[status] > 0, summary.statuses
