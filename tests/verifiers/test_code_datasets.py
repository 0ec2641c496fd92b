"""The code verifier on real benchmarks: HumanEval, MBPP and LeetCode contest problems."""

from __future__ import annotations

import ast
import gzip
import json
import re
from pathlib import Path

import pytest

from verifiers import Status, get_verifier

EXCEPTIONS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "code_mbpp_exceptions.json"
LEETCODE_FILE = "leetcode_contest_20240121-Jul.jsonl"


@pytest.fixture(scope="module")
def verifier():
    return get_verifier("code")


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def humaneval_rows(shared_data: Path) -> list[dict]:
    with gzip.open(shared_data / "code" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def humaneval_reference(row: dict) -> dict:
    return {
        "style": "assert",
        "test": row["test"],
        "entry_point": row["entry_point"],
        "prefix": row["prompt"],
    }


def test_humaneval_canonical_solutions_all_pass(shared_data, verifier):
    rows = humaneval_rows(shared_data)
    verdicts = verifier.verify_many(
        [fenced(r["canonical_solution"]) for r in rows], [humaneval_reference(r) for r in rows]
    )
    failed = {r["task_id"]: v.details for r, v in zip(rows, verdicts, strict=True) if not v.is_correct}
    assert len(rows) == 164 and not failed


def test_humaneval_bare_prompt_fails_every_problem(shared_data, verifier):
    rows = humaneval_rows(shared_data)
    # The prompt alone (signature + docstring, no body) as the whole solution: a docstring-only
    # function returns None.
    refs = [dict(humaneval_reference(r), prefix="") for r in rows]
    verdicts = verifier.verify_many([fenced(r["prompt"]) for r in rows], refs)
    passed = [r["task_id"] for r, v in zip(rows, verdicts, strict=True) if v.score > 0]
    assert not passed
    assert all(v.status in (Status.WRONG, Status.TIMEOUT) for v in verdicts)


def mbpp_results(shared_data: Path, verifier, task_ids: range) -> tuple[int, dict[int, str]]:
    rows = [json.loads(line) for line in (shared_data / "code" / "mbpp.jsonl").open() if line.strip()]
    rows = [r for r in rows if r["task_id"] in task_ids]
    refs = [{"style": "assert", "test": "\n".join(r["test_list"]), "setup": r["test_setup_code"]} for r in rows]
    verdicts = verifier.verify_many([fenced(r["code"]) for r in rows], refs)
    failed = {r["task_id"]: v.details for r, v in zip(rows, verdicts, strict=True) if not v.is_correct}
    return len(rows), failed


def check_mbpp(total: int, failed: dict[int, str]) -> None:
    known = {int(k) for k in json.loads(EXCEPTIONS_FILE.read_text())}
    assert (total - len(failed)) / total >= 0.99, failed
    assert set(failed) <= known, f"failures not listed in {EXCEPTIONS_FILE.name}: {failed}"


def test_mbpp_test_split_reference_solutions_pass(shared_data, verifier):
    check_mbpp(*mbpp_results(shared_data, verifier, range(11, 511)))


@pytest.mark.slow
def test_mbpp_all_reference_solutions_pass(shared_data, verifier):
    check_mbpp(*mbpp_results(shared_data, verifier, range(1, 975)))


# --- LeetCode contest problems: class Solution, call-based -----------------------------------

LEETCODE_SOLUTIONS = {
    "weekly-contest-381-minimum-number-of-pushes-to-type-word-i": (
        "def minimumPushes(self, word):\n        return sum(i // 8 + 1 for i in range(len(word)))"
    ),
    "biweekly-contest-122-divide-an-array-into-subarrays-with-minimum-cost-i": (
        "def minimumCost(self, nums):\n        return nums[0] + sum(sorted(nums[1:])[:2])"
    ),
    "weekly-contest-380-count-elements-with-maximum-frequency": (
        "def maxFrequencyElements(self, nums):\n        c = Counter(nums)\n        m = max(c.values())\n"
        "        return sum(v for v in c.values() if v == m)"
    ),
    "weekly-contest-378-check-if-bitwise-or-has-trailing-zeros": (
        "def hasTrailingZeros(self, nums):\n        return sum(x % 2 == 0 for x in nums) >= 2"
    ),
    "weekly-contest-377-minimum-number-game": (
        "def numberGame(self, nums):\n        s = sorted(nums)\n"
        "        return [x for i in range(0, len(s), 2) for x in (s[i + 1], s[i])]"
    ),
    "weekly-contest-375-count-tested-devices-after-test-operations": (
        "def countTestedDevices(self, batteryPercentages):\n        done = 0\n"
        "        for b in batteryPercentages:\n            done += b - done > 0\n        return done"
    ),
}
PREFIX = "from typing import *\nfrom collections import *\n"


def leetcode_rows(shared_data: Path) -> dict[str, dict]:
    path = shared_data / "code" / LEETCODE_FILE
    return {r["task_id"]: r for r in map(json.loads, path.open()) if r}


def leetcode_call_reference(row: dict) -> dict:
    """Rewrite the problem's assert test code as call-style cases (args in signature order)."""
    fn_name, params = re.search(r"def (\w+)\(self,?([^)]*)\)", row["prompt"]).groups()
    order = [p.split(":")[0].strip() for p in params.split(",") if p.strip()]
    cases, kwargs = [], None
    for node in ast.parse(row["test"]).body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "test_input":
            kwargs = ast.literal_eval(node.value)
        elif isinstance(node, ast.Assert):
            expected = ast.literal_eval(node.test.comparators[0])
            cases.append({"args": [kwargs[name] for name in order], "expected": expected})
    return {"style": "call", "fn_name": fn_name, "class_name": "Solution", "cases": cases}


def solution_class(method: str) -> str:
    return f"{PREFIX}class Solution:\n    {method}\n"


@pytest.mark.parametrize("task_id", sorted(LEETCODE_SOLUTIONS))
def test_leetcode_correct_solution_passes_both_ways(shared_data, verifier, task_id):
    row = leetcode_rows(shared_data)[task_id]
    completion = fenced(solution_class(LEETCODE_SOLUTIONS[task_id]))
    call = verifier.verify(completion, leetcode_call_reference(row))
    as_assert = verifier.verify(completion, {"style": "assert", "test": row["test"]})
    assert call.status is Status.CORRECT, call
    assert as_assert.status is Status.CORRECT, as_assert
    assert call.details == "100/100 tests passed"  # every test: the verifier caps none by default


@pytest.mark.parametrize("offset", range(0, 180, 30))
def test_leetcode_wrong_solution_fails(shared_data, verifier, offset):
    row = list(leetcode_rows(shared_data).values())[offset]
    reference = leetcode_call_reference(row)
    wrong = solution_class(f"def {reference['fn_name']}(self, *args, **kwargs):\n        return None")
    verdict = verifier.verify(fenced(wrong), dict(reference, prefix=PREFIX))
    assert verdict.status is Status.WRONG and "expected" in verdict.details, verdict
    as_assert = verifier.verify(fenced(wrong), {"style": "assert", "test": row["test"]})
    assert as_assert.status is Status.WRONG and "AssertionError" in as_assert.details, as_assert
