"""Tool-call parsing and the BFCL-style ``tool_calls`` verifier on hand-written tables."""

from __future__ import annotations

import json

import pytest

from verifiers import Status, get_verifier, verify
from verifiers.tool_call_parsing import (
    ToolCall,
    ToolCallFormatError,
    completion_text,
    parse_tool_calls,
    render_tool_calls,
)


def tc(name: str, **arguments: object) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


PARSE_CASES = [
    ("no call here", []),
    ("", []),
    (tc("f", x=1), [ToolCall("f", {"x": 1})]),
    (tc("f", x=1) + "\ntext\n" + tc("g"), [ToolCall("f", {"x": 1}), ToolCall("g", {})]),
    ('<tool_call>{"name": "f", "arguments": {"a": "b"}}', [ToolCall("f", {"a": "b"})]),
    ('<tool_call>{"name": "f", "arguments": "{\\"a\\": 2}"}</tool_call>', [ToolCall("f", {"a": 2})]),
    (
        '[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]',
        [ToolCall("f", {"a": 1}), ToolCall("g", {})],
    ),
    ('```json\n{"name": "f", "parameters": {"a": 1}}\n```', [ToolCall("f", {"a": 1})]),
    ('[{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]', [ToolCall("f", {"a": 1})]),
    ("[]", []),
    ("[1, 2] is the list", []),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parse_text(text: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(text) == expected


MALFORMED = [
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"arguments": {}}</tool_call>',
    '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
    '<tool_call>{"name": "f", "arguments": "{bad"}</tool_call>',
    '<tool_call>{"name": 3}</tool_call>',
    "</tool_call>",
    '{"name": "f", "arguments": {',
    "<tool_call>" * 3,
    tc("f") * 100,
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_calls_raise_format_error(text: str) -> None:
    with pytest.raises(ToolCallFormatError):
        parse_tool_calls(text)


def test_trl_messages_and_render_round_trip() -> None:
    messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
        },
        {"role": "tool", "name": "f", "content": tc("ignored")},
        {"role": "assistant", "content": tc("g", b="x")},
    ]
    calls = parse_tool_calls(messages)
    assert calls == [ToolCall("f", {"a": 1}), ToolCall("g", {"b": "x"})]
    assert parse_tool_calls(render_tool_calls(calls)) == calls


FUNCS = [
    {
        "name": "area",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {"type": "integer"},
                "height": {"type": "float"},
                "unit": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "dict", "properties": {"round": {"type": "boolean"}}},
            },
            "required": ["base", "height"],
        },
    },
    {"name": "math.hypot", "parameters": {"type": "dict", "properties": {"x": {"type": "any"}}}},
]
GOLD_AREA = {
    "area": {
        "base": [10],
        "height": [5.0],
        "unit": ["units", ""],
        "tags": [["Big Red"], ""],
        "opts": [{"round": [True, ""]}, ""],
    }
}
SINGLE = {"functions": FUNCS, "ground_truth": [GOLD_AREA], "parallel": False}

SINGLE_CASES = [
    (tc("area", base=10, height=5.0), Status.CORRECT),
    (tc("area", base=10, height=5), Status.CORRECT),  # int accepted for float
    (tc("area", base=10, height=5, unit="UNITS "), Status.CORRECT),  # BFCL string normalisation
    (tc("area", base=10, height=5, tags=["big-red"]), Status.CORRECT),
    (tc("area", base=10, height=5, opts={"round": True}), Status.CORRECT),
    (tc("area", base=10, height=5, opts={}), Status.CORRECT),  # nested optional key omitted
    (tc("area", base=10, height=5, opts={"round": False}), Status.WRONG),
    (tc("area", base=10, height=5, opts={"other": 1}), Status.WRONG),
    (tc("area", base=10.0, height=5), Status.WRONG),  # float for integer
    (tc("area", base="10", height=5), Status.WRONG),
    (tc("area", base=True, height=5), Status.WRONG),  # bool is not an integer
    (tc("area", base=11, height=5), Status.WRONG),
    (tc("area", base=10), Status.WRONG),  # missing required
    (tc("area", base=10, height=5, color="red"), Status.WRONG),  # unexpected parameter
    (tc("area", base=10, height=5, tags="Big Red"), Status.WRONG),  # scalar for array
    (tc("area", base=10, height=5, tags=["Big Red", "x"]), Status.WRONG),
    (tc("surface", base=10, height=5), Status.WRONG),
    (tc("area", base=10, height=5) + tc("area", base=10, height=5), Status.WRONG),
    ("The area is 25.", Status.WRONG),
    ("<tool_call>{oops</tool_call>", Status.FORMAT_ERROR),
    # an integer past Python's 4300-digit limit is unparseable JSON, not a verifier crash
    ('<tool_call>{"name": "area", "arguments": {"base": ' + "9" * 5000 + "}}</tool_call>", Status.FORMAT_ERROR),
    ('{"name": "area", "arguments": {"base": ' + "9" * 5000 + ', "height": 5}}', Status.FORMAT_ERROR),
    ('<tool_call>{"name": "area", "arguments": "{\\"base\\": ' + "9" * 5000 + '}"}</tool_call>', Status.FORMAT_ERROR),
    ("[" + "9" * 5000 + "]", Status.WRONG),  # a bare list of numbers is prose, not a call
    ('```json\n{"name": "area", "arguments": {"base": 10, "height": 5}}\n```', Status.CORRECT),
    ('```{"name": "area", "arguments": {"base": 10, "height": 5}}```', Status.CORRECT),
]


@pytest.mark.parametrize(("completion", "status"), SINGLE_CASES)
def test_single_call_table(completion: str, status: Status) -> None:
    verdict = verify(completion, SINGLE, "tool_calls")
    assert verdict.status is status, verdict.details
    assert verdict.score == (1.0 if status is Status.CORRECT else 0.0)


PARALLEL = {
    "functions": FUNCS,
    "ground_truth": [
        {"area": {"base": [1], "height": [2.0]}},
        {"area": {"base": [3], "height": [4.0]}},
    ],
    "parallel": True,
}
A12, A34, A56 = (
    tc("area", base=1, height=2),
    tc("area", base=3, height=4),
    tc("area", base=5, height=6),
)

PARALLEL_CASES = [  # (completion, exact status, partial score)
    (A12 + A34, Status.CORRECT, 1.0),
    (A34 + A12, Status.CORRECT, 1.0),  # order-insensitive
    (A12, Status.WRONG, 0.5),
    (A12 + A12, Status.WRONG, 0.5),  # one prediction cannot satisfy two golds
    (A12 + A34 + A56, Status.WRONG, 2 / 3),  # an extra call costs credit
    (A56, Status.WRONG, 0.0),
    ("no calls", Status.WRONG, 0.0),
]


@pytest.mark.parametrize(("completion", "status", "partial"), PARALLEL_CASES)
def test_parallel_matching(completion: str, status: Status, partial: float) -> None:
    assert verify(completion, PARALLEL, "tool_calls").status is status
    assert verify(completion, PARALLEL, get_verifier("tool_calls", mode="partial")).score == pytest.approx(partial)


def test_ordered_when_not_parallel() -> None:
    ref = {**PARALLEL, "parallel": False}
    assert verify(A12 + A34, ref, "tool_calls").is_correct
    assert not verify(A34 + A12, ref, "tool_calls").is_correct


IRRELEVANCE = {"functions": FUNCS, "ground_truth": [], "parallel": False}


@pytest.mark.parametrize(
    ("completion", "status"),
    [
        ("I can't do that with these tools.", Status.CORRECT),
        ("", Status.CORRECT),
        (tc("area", base=1, height=2), Status.WRONG),
        (tc("nothing"), Status.WRONG),
        ("<tool_call>{</tool_call>", Status.FORMAT_ERROR),
    ],
)
def test_irrelevance(completion: str, status: Status) -> None:
    assert verify(completion, IRRELEVANCE, "tool_calls").status is status


def test_dotted_names_and_think_stripped() -> None:
    ref = {"functions": FUNCS, "ground_truth": [{"math.hypot": {"x": [3]}}], "parallel": False}
    assert verify(tc("math.hypot", x=3), ref, "tool_calls").is_correct
    assert verify(tc("math_hypot", x=3), ref, "tool_calls").is_correct
    assert verify("<think>" + tc("area") + "</think>" + tc("math.hypot", x=3), ref, "tool_calls").is_correct


@pytest.mark.parametrize(
    "reference",
    [{}, {"functions": FUNCS}, {"functions": FUNCS, "ground_truth": [{"missing_fn": {}}]}],
)
def test_unscorable_reference_is_error(reference: dict) -> None:
    assert verify(tc("area"), reference, "tool_calls").status is Status.ERROR


def test_bad_mode_fails_fast() -> None:
    with pytest.raises(ValueError, match="partial"):
        get_verifier("tool_calls", mode="fuzzy")


@pytest.mark.parametrize(
    "junk",
    [
        "\x00" * 1000,
        "{" * 50_000,
        "<tool_call>" + "[" * 100_000,
        "ü" * 10_000,
        tc("area", base="x" * 10**6),
    ],
)
def test_hostile_output_gives_verdict(junk: str) -> None:
    verdict = verify(junk, SINGLE, "tool_calls")
    assert verdict.status in (Status.WRONG, Status.FORMAT_ERROR)
    assert len(verdict.details) <= 500


@pytest.mark.parametrize(
    "junk",
    ["```" + " " * 2000 + "x", "```json\n" + "\n" * 2000 + "x```y", "```" + " \n" * 1000 + "x"],
)
def test_fence_unwrapping_is_linear(junk: str) -> None:
    import time

    start = time.monotonic()
    assert parse_tool_calls(junk) == []
    # a backtracking fence regex took 30 s and more on these; linear parsing, microseconds
    assert time.monotonic() - start < 5.0


def test_completion_text_keeps_structured_calls() -> None:
    messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "area", "arguments": {"base": 10, "height": 5}}}],
        },
        {"role": "tool", "name": "area", "content": "25"},
        {"role": "assistant", "content": "The area is 25."},
    ]
    text = completion_text(messages)
    assert verify(text, SINGLE, "tool_calls").is_correct
    assert not verify(messages, SINGLE, "tool_calls").is_correct  # plain as_text drops the calls
    broken = [{"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": {}}}]}]
    assert verify(completion_text(broken), SINGLE, "tool_calls").status is Status.FORMAT_ERROR
    assert completion_text("plain") == "plain" and completion_text(None) == ""


@pytest.mark.parametrize(
    ("completion", "reference", "hint"),
    [
        (A12 + tc("area", base=3, height=9), PARALLEL, "'height'=9"),
        (tc("area", base=10, height=5, color="red"), SINGLE, "unexpected parameter 'color'"),
        (
            tc("area", base=1, height=2) + tc("area", base=3),
            {**PARALLEL, "parallel": False},
            "'height'",
        ),
    ],
)
def test_details_name_the_mismatch(completion: str, reference: dict, hint: str) -> None:
    assert hint in verify(completion, reference, "tool_calls").details
