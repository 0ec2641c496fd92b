"""Every dataset adapter, offline: shared-data files where they exist, Hub-layout fixtures else."""

from __future__ import annotations

import json
from pathlib import Path

import _requirements as required
import pytest

from tasks.quality import QualityLog
from tasks.registry import get_task, load_task_rows
from tasks.schema import COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"
needs_shared = required.needs_shared_data()


def ref(row: dict) -> dict:
    return json.loads(row["reference"])


def user_text(row: dict) -> str:
    return row["prompt"][-1]["content"]


def check_canonical(rows: list[dict], task: str) -> None:
    spec = get_task(task)
    for row in rows:
        assert tuple(row) == COLUMNS
        assert row["domain"] == spec.domain
        assert row["id"].startswith(row["source"] + ":")
        assert isinstance(row["environment"], str) and isinstance(row["reference"], str)
    assert len({r["id"] for r in rows}) == len(rows), "ids must be unique"


# (task, limit, expected rows, check on the first row)
SHARED_CASES = [
    ("gsm8k", 5, 5, lambda r: ref(r) == {"answer": "18"} and "Janet" in user_text(r)),
    ("math500", 3, 3, lambda r: ref(r)["answer"].startswith("\\left( 3")),
    ("aime24", None, 30, lambda r: r["id"] == "aime24/test:60" and ref(r)["answer"].isdigit()),
    ("aime25", None, 30, lambda r: ref(r) == {"answer": "70"}),
    (
        "humaneval",
        None,
        164,
        lambda r: ref(r)["entry_point"] == "has_close_elements" and ref(r)["style"] == "assert",
    ),
    ("mbpp", None, 500, lambda r: r["id"] == "mbpp/test:11" and "assert" in ref(r)["test"]),
    (
        "leetcode_contest",
        2,
        2,
        lambda r: "my_solution = Solution()" in ref(r)["test"] and "```python" in user_text(r),
    ),
    ("mmlu_stem", 4, 4, lambda r: ref(r) == {"answer": "C", "num_options": 4}),
    ("mmlu_pro_sample300", 3, 3, lambda r: ref(r) == {"answer": "A", "num_options": 10}),
    ("supergpqa_sample300", 3, 3, lambda r: ref(r)["num_options"] >= 4),
    (
        "ifeval",
        None,
        541,
        lambda r: ref(r)["kwargs"][0] == {} and ref(r)["prompt"] == user_text(r),
    ),
]


@needs_shared
@pytest.mark.parametrize(("task", "limit", "expected", "check"), SHARED_CASES)
def test_shared_data_adapter(task, limit, expected, check):
    quality = QualityLog()
    rows = load_task_rows(task, limit=limit, quality=quality)
    assert len(rows) == expected
    check_canonical(rows, task)
    assert check(rows[0])
    assert quality.total_dropped() == 0


@needs_shared
def test_mcq_prompts_list_lettered_options():
    row = load_task_rows("mmlu_stem", limit=1)[0]
    lines = user_text(row).splitlines()
    assert [ln[:3] for ln in lines if ln[:2] in ("A.", "B.", "C.", "D.")] == [
        "A. ",
        "B. ",
        "C. ",
        "D. ",
    ]


@needs_shared
def test_mbpp_splits_are_task_id_ranges():
    ids = {r["id"].rsplit(":", 1)[1] for r in load_task_rows("mbpp", split="validation")}
    assert ids == {str(i) for i in range(511, 601)}


# (task, fixture, expected kept rows, expected drops, check on the first row)
FIXTURE_CASES = [
    ("math", "math_lighteval", 2, 1, lambda r: ref(r) == {"answer": "14"}),
    (
        "dapo_math_17k",
        "dapo_math_17k",
        2,
        0,
        lambda r: (
            user_text(r).startswith("Find the remainder")
            and "Remember to put" not in user_text(r)
            and r["id"].endswith(":a1b2c3")
        ),
    ),
    (
        "livecodebench",
        "livecodebench",
        2,
        0,
        lambda r: (
            ref(r)
            == {
                "style": "stdio",
                "cases": [
                    {"input": "1 2\n", "output": "3\n"},
                    {"input": "5 7\n", "output": "12\n"},
                ],
                "tests": {"public": 2, "private": 0},
            }
        ),
    ),
    ("taco", "taco", 2, 1, lambda r: ref(r)["cases"][1] == {"input": "10\n", "output": "100\n"}),
    ("apps", "apps", 2, 0, lambda r: ref(r)["style"] == "stdio" and r["id"].endswith(":4000")),
    (
        "mmlu_pro",
        "mmlu_pro",
        2,
        0,
        lambda r: ref(r) == {"answer": "B", "num_options": 10} and "\nJ. Water vapour" in user_text(r),
    ),
    ("supergpqa", "supergpqa", 2, 0, lambda r: ref(r) == {"answer": "C", "num_options": 5}),
    ("ifbench", "ifbench", 2, 0, lambda r: ref(r)["kwargs"] == [{"N": 3}, {}]),
    (
        "rlvr_ifeval",
        "rlvr_ifeval",
        2,
        1,
        lambda r: ref(r)["instruction_id_list"] == ["change_case:english_lowercase"] and ref(r)["kwargs"] == [{}],
    ),
    (
        "xlam",
        "xlam",
        2,
        0,
        lambda r: (
            ref(r)["ground_truth"] == [{"get_weather": {"city": ["Paris"], "units": [""]}}]
            and ref(r)["parallel"] is False
        ),
    ),
    (
        "toolace",
        "toolace",
        1,
        1,
        lambda r: (
            ref(r)["ground_truth"]
            == [
                {
                    "convert_currency": {
                        "amount": [100],
                        "source_currency": ["USD"],
                        "target_currency": ["EUR"],
                    }
                }
            ]
        ),
    ),
]


@pytest.mark.parametrize(("task", "fixture", "kept", "dropped", "check"), FIXTURE_CASES)
def test_hub_adapter_on_fixture(task, fixture, kept, dropped, check):
    quality = QualityLog()
    rows = load_task_rows(task, data_files=str(FIXTURES / f"{fixture}.jsonl"), quality=quality)
    assert len(rows) == kept
    assert quality.total_dropped() == dropped
    check_canonical(rows, task)
    assert check(rows[0])


def test_livecodebench_functional_tests_become_call_cases():
    rows = load_task_rows("livecodebench", data_files=str(FIXTURES / "livecodebench.jsonl"))
    assert ref(rows[1]) == {
        "style": "call",
        "fn_name": "sumOf",
        "class_name": "Solution",
        "cases": [{"args": [[1, 2, 3]], "expected": 6}],
        "tests": {"public": 1, "private": 0},
    }


def test_taco_call_outputs_are_unwrapped():
    rows = load_task_rows("taco", data_files=str(FIXTURES / "taco.jsonl"))
    assert ref(rows[1])["cases"] == [{"args": [1], "expected": 2}, {"args": [4], "expected": 8}]


def test_rlvr_at_most_becomes_less_than_next_integer():
    rows = load_task_rows("rlvr_ifeval", data_files=str(FIXTURES / "rlvr_ifeval.jsonl"))
    assert ref(rows[1])["kwargs"] == [{"num_words": 51, "relation": "less than"}]


def test_gpqa_shuffle_is_stable_and_keeps_the_right_answer():
    path = str(FIXTURES / "gpqa_diamond.jsonl")
    first, again = (
        load_task_rows("gpqa_diamond", data_files=path),
        load_task_rows("gpqa_diamond", data_files=path),
    )
    assert first == again
    for row in first:
        letter = ref(row)["answer"]
        line = next(ln for ln in user_text(row).splitlines() if ln.startswith(f"{letter}. "))
        assert line[3:] in ("Photon", "7")


BLEND = str(FIXTURES / "nemotron_blend.jsonl")


@pytest.mark.parametrize(
    ("task", "kept", "dropped"),
    [
        ("nemotron_math", 2, 3),  # three unresolved placeholder rows
        ("nemotron_science", 1, 0),
        ("nemotron_instruction", 1, 0),
        ("nemotron_code", 1, 0),
        ("nemotron_agent", 7, 2),  # an id the tables lack, a tool the workbench lacks
    ],
)
def test_nemotron_blend_splits_by_dataset_field(task, kept, dropped):
    quality = QualityLog()
    rows = load_task_rows(task, data_files=BLEND, quality=quality)
    assert (len(rows), quality.total_dropped()) == (kept, dropped)
    check_canonical(rows, task)


def test_nemotron_blend_references():
    load = lambda t: ref(load_task_rows(t, data_files=BLEND)[0])  # noqa: E731
    assert load("nemotron_math") == {"answer": "81"}
    assert load("nemotron_science") == {"answer": "B", "num_options": 4}
    assert load("nemotron_instruction")["kwargs"] == [{}, {"relation": "at least", "num_words": 40}]
    assert load("nemotron_code")["cases"][1] == {"input": "10 -4\n", "output": "6\n"}
    agent = load_task_rows("nemotron_agent", data_files=BLEND)[0]
    assert agent["environment"] == "workbench" and agent["prompt"][0]["role"] == "system"
    assert json.loads(agent["reference"])["task"]["ground_truth"][0]["name"] == "email_send_email"


def _gold_completion(row: dict) -> str:
    answer = ref(row)["answer"]
    return f"\\boxed{{{answer}}}" if row["verifier"] == "math" else f"Answer: {answer}"


@pytest.mark.parametrize(
    ("task", "data_files"),
    [
        ("gsm8k", None),
        ("math500", None),
        ("aime25", None),
        ("mmlu_stem", None),
        ("mmlu_pro_sample300", None),
        ("supergpqa_sample300", None),
        ("mmlu_pro", "mmlu_pro"),
        ("gpqa_diamond", "gpqa_diamond"),
        ("nemotron_math", "nemotron_blend"),
        ("nemotron_science", "nemotron_blend"),
    ],
)
def test_references_score_their_gold_answer(task, data_files):
    """References are in the format the registered verifier reads: the gold answer scores 1."""
    import verifiers

    if data_files is None:
        required.shared_data()
    files = str(FIXTURES / f"{data_files}.jsonl") if data_files else None
    rows = load_task_rows(task, limit=20, data_files=files)
    for row in rows:
        verdict = verifiers.verify(_gold_completion(row), ref(row), row["verifier"])
        assert verdict.score == 1.0, (row["id"], verdict)
        wrong = "Answer: Z" if row["verifier"] == "science_mcq" else "\\boxed{-123456789}"
        assert verifiers.verify(wrong, ref(row), row["verifier"]).score == 0.0
