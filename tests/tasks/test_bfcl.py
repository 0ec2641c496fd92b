"""BFCL v3 conformance: every possible answer verifies correct, every mutation of it wrong."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import _requirements as required
import pytest

from tasks.bfcl import CATEGORIES, BfclDataError, gold_calls, load_bfcl
from tasks.registry import shared_data_dir
from tasks.schema import COLUMNS, reference_of
from verifiers import Status, get_verifier
from verifiers.tool_call_parsing import render_tool_calls
from verifiers.tool_calls import allowed

DATA = shared_data_dir()
BFCL = DATA / "agent" / "bfcl_v3"
pytestmark = required.needs_shared_data("agent/bfcl_v3")

CALL_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")
VERIFIER = get_verifier("tool_calls")
MUTATIONS = ("wrong_function", "wrong_value", "missing_required", "extra_parameter", "wrong_type")


@pytest.fixture(scope="module", params=CALL_CATEGORIES)
def rows(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return load_bfcl(request.param, BFCL)


def _score(calls: list[dict[str, Any]], reference: dict[str, Any]) -> Status:
    return VERIFIER.verify(render_tool_calls(calls), reference).status


def test_rows_are_canonical() -> None:
    expected = {
        "simple": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
        "irrelevance": 240,
    }
    for category in CATEGORIES:
        rows = load_bfcl(category, BFCL)
        assert len(rows) == expected[category]
        row = rows[0]
        assert tuple(row) == COLUMNS
        assert (row["domain"], row["verifier"], row["environment"]) == ("agent", "tool_calls", "")
        assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
        assert reference_of(row)["parallel"] == category.startswith("parallel")
    assert len(load_bfcl("simple", BFCL, limit=7)) == 7


def test_every_possible_answer_is_correct(rows: list[dict[str, Any]]) -> None:
    failures = []
    for row in rows:
        ref = reference_of(row)
        verdict = VERIFIER.verify(render_tool_calls(gold_calls(ref["ground_truth"], ref["functions"])), ref)
        if not verdict.is_correct:
            failures.append((row["id"], verdict.details))
    assert not failures, failures[:5]


def _schema_of(ref: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    doc = next(f for f in ref["functions"] if f["name"] == call["name"])
    return doc["parameters"]


def _gold_options(ref: dict[str, Any], index: int, param: str) -> list[Any]:
    ((_, params),) = ref["ground_truth"][index].items()
    return params[param]


def _different_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return value + " qzx"
    if isinstance(value, list):
        return [*value, value[0] if value else "qzx"]
    return {"qzx": 1}


def _different_type(value: Any) -> Any:
    return "qzx" if not isinstance(value, str) else 7919


def mutate(calls: list[dict[str, Any]], ref: dict[str, Any], kind: str) -> list[dict[str, Any]] | None:
    """One mutated copy of the right answer, or None when this item admits no such mutation."""
    calls = copy.deepcopy(calls)
    for i, call in enumerate(calls):
        args, schema = call["arguments"], _schema_of(ref, call)
        if kind == "wrong_function":
            call["name"] += "_v2"
            return calls
        if kind == "extra_parameter":
            args["qzx_unknown"] = 1
            return calls
        if kind == "missing_required":
            required = [p for p in schema.get("required", []) if p in args]
            if required:
                del args[required[0]]
                return calls
            continue
        change = _different_value if kind == "wrong_value" else _different_type
        for param, value in args.items():
            new = change(value)
            if not allowed(new, _gold_options(ref, i, param)):
                args[param] = new
                return calls
    return None


@pytest.mark.parametrize("kind", MUTATIONS)
def test_every_mutation_is_wrong(rows: list[dict[str, Any]], kind: str) -> None:
    mutated, failures = 0, []
    for row in rows:
        ref = reference_of(row)
        bad = mutate(gold_calls(ref["ground_truth"], ref["functions"]), ref, kind)
        if bad is None:
            continue
        mutated += 1
        if _score(bad, ref) is not Status.WRONG:
            failures.append(row["id"])
    assert not failures, failures[:5]
    # nearly every item admits each mutation; a silent skip of most would hide a broken test
    assert mutated >= 0.9 * len(rows)


def test_irrelevance_no_call_correct_any_call_wrong() -> None:
    for row in load_bfcl("irrelevance", BFCL):
        ref = reference_of(row)
        assert ref["ground_truth"] == []
        assert VERIFIER.verify("I cannot do that with the available functions.", ref).is_correct
        fn = ref["functions"][0]
        args = {p: 1 for p in fn["parameters"].get("required", [])}
        call = render_tool_calls([{"name": fn["name"], "arguments": args}])
        assert VERIFIER.verify(call, ref).status is Status.WRONG, row["id"]


def test_bad_category_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(BfclDataError, match="supported"):
        load_bfcl("multi_turn_long_context", BFCL)
    with pytest.raises(BfclDataError, match="not found"):
        load_bfcl("simple", tmp_path)


def test_the_split_holds_out_a_quarter_never_trained_on() -> None:
    from tasks.bfcl import load_bfcl_split
    from tasks.registry import load_task_rows

    train = load_task_rows("bfcl_calls", data_dir=DATA)
    held = load_task_rows("bfcl_calls_heldout", data_dir=DATA)
    assert {r["id"] for r in train}.isdisjoint(r["id"] for r in held)
    assert len(train) + len(held) == 600  # every simple and multiple item, once
    assert 0.2 < len(held) / 600 < 0.3
    # a limited draw still holds both categories, and the same rows on every call
    first = load_task_rows("bfcl_calls_heldout", data_dir=DATA, limit=40)
    assert {r["source"] for r in first} == {"bfcl_v3/simple", "bfcl_v3/multiple"}
    assert [r["id"] for r in first] == [r["id"] for r in held[:40]]
    with pytest.raises(BfclDataError, match="train or test"):
        load_bfcl_split("validation", BFCL)
