"""M2RL's nine benchmarks as tasks: fixtures in the Hub layout, real verifiers, local copies."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import _requirements as required
import pytest

import verifiers
from tasks.adapters.livecodebench import HUB_REVISION, RELEASE_FILES, pickled_string
from tasks.adapters.paper_benchmarks import REDUX_SUBJECTS, option_index
from tasks.adapters.science import gpqa_order
from tasks.quality import MissingColumnError, QualityLog
from tasks.registry import (
    LoadRequest,
    UnknownTaskError,
    get_task,
    load_task_rows,
    read_source,
    shared_data_dir,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
LCB = FIXTURES / "livecodebench.jsonl"
# main_table.csv's columns; the IFEval column is the ifeval task's strict prompt-level score
PAPER_TASKS = {
    "aime24": "aime24",
    "aime25": "aime25",
    "livecodebench_v5": "livecodebench_v5",
    "livecodebench_v6": "livecodebench_v6",
    "hle": "hle",
    "gpqa_diamond": "gpqa_diamond",
    "ifeval_strict_prompt": "ifeval",
    "ifbench": "ifbench",
    "mmlu_redux": "mmlu_redux",
}


def ref(row: dict) -> dict:
    return json.loads(row["reference"])


def user(row: dict) -> str:
    return row["prompt"][-1]["content"]


def load(task: str, files: str | Path | None = None, quality: QualityLog | None = None):
    return load_task_rows(task, data_files=str(files) if files else None, quality=quality)


def fixture(task: str) -> Path:
    return LCB if task.startswith("livecodebench") else FIXTURES / f"{task}.jsonl"


def score(row: dict, completion: str) -> float:
    return verifiers.verify(completion, ref(row), row["verifier"]).score


def test_the_nine_benchmarks_are_registered_with_known_verifiers():
    for column, task in PAPER_TASKS.items():
        spec = get_task(task)
        assert spec.verifier in verifiers.known_verifiers(), column
    table = shared_data_dir() / "m2rl_paper" / "main_table.csv"
    if table.is_file():
        header = table.read_text(encoding="utf-8").splitlines()[0].split(",")
        assert header[2:] == list(PAPER_TASKS)


# (task, ids kept, rows read, rows dropped)
FIXTURE_CASES = [
    ("livecodebench_v5", ["abc900_b", "3901"], 3, 1),
    ("livecodebench_v6", ["2071A", "3950"], 3, 1),
    ("livecodebench", ["abc900_b", "3901", "2071A", "3950", "abc355_a"], 7, 2),
    ("hle", [f"66f0a1b2c3d4e5f60000000{i}" for i in (1, 2, 3)], 5, 2),
    ("gpqa_diamond", [f"rec0aFixture00000{i}" for i in (1, 2, 3, 4)], 6, 2),
    ("mmlu_redux", None, 10, 6),
]


@pytest.mark.parametrize(("task", "ids", "read", "dropped"), FIXTURE_CASES)
def test_adapter_keeps_and_drops_what_the_card_says(task, ids, read, dropped):
    quality = QualityLog()
    rows = load(task, fixture(task), quality)
    counts = quality.counts(f"{task}/{get_task(task).split}")
    assert (counts.read, sum(counts.dropped.values())) == (read, dropped)
    if ids is not None:
        assert [r["id"].rsplit(":", 1)[1] for r in rows] == ids
    assert len(rows) == read - dropped


def test_livecodebench_references_hold_public_and_private_tests():
    stdio, call = load("livecodebench_v5", LCB)
    assert ref(stdio)["style"] == "stdio" and len(ref(stdio)["cases"]) == 5
    assert ref(stdio)["cases"][0] == {"input": "3\n1 5 2\n", "output": "4\n"}
    assert ref(stdio)["cases"][2] == {"input": "4\n10 10 10 10\n", "output": "0\n"}
    assert "standard input" in user(stdio) and "Spread of Scores" not in user(stdio)
    assert (ref(call)["style"], ref(call)["fn_name"], ref(call)["class_name"]) == (
        "call",
        "countEvens",
        "Solution",
    )
    assert ref(call)["tests"] == {"public": 1, "private": 25}
    assert len(ref(call)["cases"]) == 26  # every test: a benchmark grades them all
    assert ref(call)["cases"][0] == {"args": [[1, 2, 4]], "expected": 2}
    assert "```python\nclass Solution:\n    def countEvens" in user(call)
    assert load("livecodebench_v5", LCB) == [stdio, call]  # loading is deterministic
    two_args = load("livecodebench_v6", LCB)[1]
    assert ref(two_args)["cases"][0] == {"args": [3, 4], "expected": 7}


def test_private_tests_are_read_from_the_pickle_without_unpickling(capsys):
    import pickle

    quality = QualityLog()
    load("livecodebench_v6", LCB, quality)
    reasons = quality.counts("livecodebench_v6/test").dropped
    assert list(reasons) == ["private tests cannot be decoded: pickle holds more than a string: opcode GLOBAL"]
    assert "LCB_FIXTURE_UNPICKLED" not in capsys.readouterr().out
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickled_string(pickle.dumps('[{"a": 1}]', protocol=protocol)) == '[{"a": 1}]'
        with pytest.raises(ValueError, match="more than a string"):
            pickled_string(pickle.dumps(["a"], protocol=protocol))


LCB_PROGRAMS = {  # question id -> (correct, wrong)
    "abc900_b": (
        "n = int(input())\na = list(map(int, input().split()))\nprint(max(a) - min(a))",
        "n = int(input())\na = list(map(int, input().split()))\nprint(max(a))",
    ),
    "3901": (
        "class Solution:\n    def countEvens(self, nums):\n        return sum(x % 2 == 0 for x in nums)",
        "class Solution:\n    def countEvens(self, nums):\n        return len(nums)",
    ),
    "2071A": ("print(input().strip()[::-1])", "print(input().strip())"),
    "3950": (
        "class Solution:\n    def addUp(self, a, b):\n        return a + b",
        "class Solution:\n    def addUp(self, a, b):\n        return a * b",
    ),
}


def test_livecodebench_programs_run_in_the_sandbox():
    rows = load("livecodebench_v5", LCB) + load("livecodebench_v6", LCB)
    for row in rows:
        right, wrong = LCB_PROGRAMS[row["id"].rsplit(":", 1)[1]]
        good = verifiers.verify(f"```python\n{right}\n```", ref(row), "code")
        bad = verifiers.verify(f"```python\n{wrong}\n```", ref(row), "code")
        assert good.is_correct, (row["id"], good)
        assert (bad.status.value, bad.score) == ("wrong", 0.0), (row["id"], bad)


def test_hle_rows_are_scored_by_their_own_verifier():
    name, fraction, choice = load("hle", FIXTURES / "hle.jsonl")
    assert (name["verifier"], fraction["verifier"], choice["verifier"]) == (
        "exact_match",
        "exact_match",
        "science_mcq",
    )
    assert "\\boxed{}" in user(name) and user(choice).count("\n", 0) > 5
    assert ref(choice) == {"answer": "C", "num_options": 5}
    assert (score(name, "Answer: mordred."), score(name, "Answer: Arthur")) == (1.0, 0.0)
    assert (score(fraction, "\\boxed{0.75}"), score(fraction, "\\boxed{1/2}")) == (1.0, 0.0)
    assert (score(choice, "Answer: C"), score(choice, "Answer: B")) == (1.0, 0.0)
    assert "LLM judge" in get_task("hle").description


def test_gpqa_order_is_recorded_deterministic_and_differs_across_records():
    raw = [json.loads(line) for line in (FIXTURES / "gpqa_diamond.jsonl").open()]
    rows = load("gpqa_diamond", FIXTURES / "gpqa_diamond.jsonl")
    assert rows == load("gpqa_diamond", FIXTURES / "gpqa_diamond.jsonl")
    assert gpqa_order("rec0aFixture000001") == (2947377624, [2, 1, 0, 3])  # across versions
    assert gpqa_order("rec0aFixture000001", base_seed=1) != gpqa_order("rec0aFixture000001")
    for source, row in zip(raw, rows, strict=False):
        r = ref(row)
        answers = [source["Correct Answer"]] + [source[f"Incorrect Answer {i}"] for i in (1, 2, 3)]
        lines = [ln[3:] for ln in user(row).splitlines() if ln[:3] in ("A. ", "B. ", "C. ", "D. ")]
        assert lines == [answers[i] for i in r["order"]]
        assert (r["base_seed"], r["shuffle_seed"]) == (0, gpqa_order(source["Record ID"])[0])
        assert lines["ABCD".index(r["answer"])] == source["Correct Answer"]
        wrong = next(x for x in "ABCD" if x != r["answer"])
        assert (score(row, f"Answer: {r['answer']}"), score(row, f"Answer: {wrong}")) == (1, 0)
    assert len({tuple(ref(r)["order"]) for r in rows}) > 1


def test_mmlu_redux_answers_follow_error_type():
    rows = load("mmlu_redux", FIXTURES / "mmlu_redux.jsonl")
    assert [ref(r)["answer"] for r in rows] == ["C", "B", "C", "D"]  # ok, ok, letter, text
    assert user(rows[2]).startswith("How many protons") and "\nC. 6\n" in user(rows[2])
    assert rows[1]["id"].startswith("mmlu_redux/test:high_school_chemistry/")
    assert (score(rows[2], "Answer: C"), score(rows[2], "Answer: A")) == (1.0, 0.0)


@pytest.mark.parametrize(
    ("value", "index"),
    [("C", 2), ("c", 2), (2, 2), (2.0, 2), ("2", 2), ("Argon", 1), (None, None)]
    + [(float("nan"), None), (7, None), ("E", None), (True, None), ("Neon", None)],
)
def test_correct_answer_names_an_option(value, index):
    assert option_index(value, ["Helium", "Argon", "Krypton", "Xenon"]) == index


# (task, column removed from the fixture's first row)
BROKEN = [
    ("livecodebench_v5", "contest_date"),
    ("livecodebench_v6", "public_test_cases"),
    ("hle", "answer_type"),
    ("gpqa_diamond", "Record ID"),
    ("mmlu_redux", "error_type"),
]


@pytest.mark.parametrize(("task", "column"), BROKEN)
def test_a_local_copy_missing_a_required_column_fails_naming_it(tmp_path, task, column):
    rows = [json.loads(line) for line in fixture(task).open()]
    if task == "livecodebench_v6":
        rows = rows[2:]  # start in v6's window
    del rows[0][column]
    broken = tmp_path / "copy.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MissingColumnError, match=f"lacks required column '{column}'"):
        load(task, broken)


def test_rlvr_task_files_points_tasks_at_local_copies(tmp_path, monkeypatch):
    raw = [json.loads(line) for line in (FIXTURES / "gpqa_diamond.jsonl").open()]
    as_csv = tmp_path / "gpqa_diamond.csv"
    with as_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(raw[0]))
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in raw)
    redux = FIXTURES / "mmlu_redux.jsonl"
    monkeypatch.setenv("RLVR_TASK_FILES", f"gpqa_diamond={as_csv}; mmlu_redux={redux}")
    assert load_task_rows("gpqa_diamond") == load("gpqa_diamond", FIXTURES / "gpqa_diamond.jsonl")
    assert load_task_rows("mmlu_redux") == load("mmlu_redux", redux)
    for value, error in [
        ("gpqa_diamnd=/x.jsonl", UnknownTaskError),
        ("gpqa_diamond", ValueError),
        (f"gpqa_diamond={tmp_path / 'absent.jsonl'}", FileNotFoundError),
    ]:
        monkeypatch.setenv("RLVR_TASK_FILES", value)
        with pytest.raises(error, match="gpqa_diamn|RLVR_TASK_FILES"):
            load_task_rows("gpqa_diamond")


def test_livecodebench_reads_the_release_files_at_the_pinned_revision(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")

    def download(repo_id, filename, repo_type, revision):
        calls.append((repo_id, filename, repo_type, revision))
        return str(LCB if filename == "test.jsonl" else empty)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    assert load_task_rows("livecodebench_v5") == load("livecodebench_v5", LCB)
    assert [c[1] for c in calls] == list(RELEASE_FILES["release_v5"])
    assert {(c[0], c[2], c[3]) for c in calls} == {("livecodebench/code_generation_lite", "dataset", HUB_REVISION)}


def test_mmlu_redux_reads_every_subject_config(monkeypatch):
    import datasets

    raw = [json.loads(line) for line in (FIXTURES / "mmlu_redux.jsonl").open()]
    calls = []

    def load_dataset(path, name, split, revision):
        calls.append((path, name, split, revision))
        return [{k: v for k, v in r.items() if k != "subject"} for r in raw if r["subject"] == name]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    assert load_task_rows("mmlu_redux") == load("mmlu_redux", FIXTURES / "mmlu_redux.jsonl")
    assert [c[1] for c in calls] == list(REDUX_SUBJECTS) and len(calls) == 57
    assert {(c[0], c[2], c[3]) for c in calls} == {("edinburgh-dawg/mmlu-redux-2.0", "test", None)}


def test_hub_revision_reaches_load_dataset(monkeypatch, tmp_path):
    import dataclasses

    import datasets

    seen = {}
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: seen.update(kw) or [])
    spec = dataclasses.replace(get_task("hle"), hub_revision="0" * 40)
    list(read_source(spec, LoadRequest("test", None, tmp_path, 0)))
    assert seen == {"split": "test", "revision": "0" * 40}


def test_ifbench_reads_the_shared_copy_and_every_row_is_scorable():
    path = required.shared_data("instruction_following") / "IFBench_test.jsonl"
    assert get_task("ifbench").local_file == "instruction_following/IFBench_test.jsonl"
    quality = QualityLog()
    rows = load_task_rows("ifbench", quality=quality)
    assert len(rows) == 300 and quality.total_dropped() == 0
    assert {str(json.loads(line)["key"]) for line in path.open()} == {r["id"].rsplit(":", 1)[1] for r in rows}
    filler = "Here is my answer.\n\nThe committee met on Tuesday, and the plan was approved."
    statuses = set()
    for row in rows:
        for completion in (filler, user(row)):
            verdict = verifiers.verify(completion, ref(row), row["verifier"])
            assert verdict.status.value != "error", (row["id"], verdict)
            statuses.add(verdict.status.value)
    assert statuses == {"correct", "wrong"}
