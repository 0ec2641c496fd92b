"""The code verifier's grading rules as (completion, reference, expected) tables, on the real sandbox."""

from __future__ import annotations

import pytest

from verifiers import Status, get_verifier, verify
from verifiers.code.judge import values_equal

F = "```"


def py(code: str) -> str:
    return f"{F}python\n{code}\n{F}"


@pytest.fixture(scope="module")
def verifier():
    return get_verifier("code", test_time_limit_s=1.0, sample_time_limit_s=3.0, memory_mb=256)


ADD = {
    "style": "stdio",
    "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5", "output": "10"}],
}
ADD_CODE = "a, b = map(int, input().split())\nprint(a + b)"
HALF = {"style": "stdio", "cases": [{"input": "1", "output": "0.3333333"}], "float_tol": 1e-5}
CALL = {
    "style": "call",
    "fn_name": "add",
    "cases": [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}],
}
METHOD = {
    "style": "call",
    "fn_name": "twice",
    "class_name": "Solution",
    "cases": [{"args": [[1, 2]], "expected": [1, 2, 1, 2]}],
}
ASSERTS = {"style": "assert", "test": "assert sq(2) == 4\nassert sq(3) == 9\nassert sq(-1) == 1"}
CHECK = {
    "style": "assert",
    "test": "def check(candidate):\n    assert candidate(2) == 4",
    "entry_point": "sq",
    "prefix": "def sq(x):\n",
}

TABLE = [
    # (completion, reference, status, score, words expected in details)
    (py(ADD_CODE), ADD, Status.CORRECT, 1.0, "2/2"),
    (py("a, b = map(int, input().split())\nprint(a + b)\nprint()\n"), ADD, Status.CORRECT, 1.0, ""),
    (
        py("print(int(input().split()[0]) * 3)"),
        ADD,
        Status.WRONG,
        0.0,
        "test 2/2 failed: wrong_output: line 1: expected '10', got '15'",
    ),
    (
        py("a, b = map(int, input().split())\nprint(a + b)\nprint('extra')"),
        ADD,
        Status.WRONG,
        0.0,
        "expected 1 lines, got 2",
    ),
    (py("print(1 / 3)"), HALF, Status.CORRECT, 1.0, ""),
    (py("print(0.334)"), HALF, Status.WRONG, 0.0, "expected '0.3333333'"),
    (py("raise ValueError('boom')"), ADD, Status.WRONG, 0.0, "ValueError: boom"),
    (py("while True:\n    pass"), ADD, Status.TIMEOUT, 0.0, "timeout"),
    # what RLIMIT_CPU sends a loop that spends its CPU seconds before the wall deadline
    (
        py("import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)"),
        ADD,
        Status.TIMEOUT,
        0.0,
        "CPU time limit",
    ),
    (
        py("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"),
        ADD,
        Status.WRONG,
        0.0,
        "killed by signal 11",
    ),
    (py("def add(a, b):\n    return a + b"), CALL, Status.CORRECT, 1.0, ""),
    (
        py("def add(a, b):\n    return a * b"),
        CALL,
        Status.WRONG,
        0.0,
        "test 1/2 failed: wrong_output: expected 3, got 2",
    ),
    (py("def plus(a, b):\n    return a + b"), CALL, Status.WRONG, 0.0, "defines no callable 'add'"),
    (py("def add(a, b):\n    return 1 / 0"), CALL, Status.WRONG, 0.0, "ZeroDivisionError"),
    (py("def add(a, b):\n    return [0] * 10**9"), CALL, Status.WRONG, 0.0, "memory"),
    (py("def add(a, b):\n    return {1, 2}"), CALL, Status.WRONG, 0.0, "non-JSON"),
    (
        py("class Solution:\n    def twice(self, xs):\n        return xs * 2"),
        METHOD,
        Status.CORRECT,
        1.0,
        "",
    ),
    (
        py("class Solution:\n    def twice(self, xs):\n        return tuple(xs * 2)"),
        METHOD,
        Status.CORRECT,
        1.0,
        "",
    ),
    (py("def sq(x):\n    return x * x"), ASSERTS, Status.CORRECT, 1.0, "3/3"),
    (
        py("def sq(x):\n    return x * 2"),
        ASSERTS,
        Status.WRONG,
        0.0,
        "test 2/3 failed: exception: assert sq(3) == 9: AssertionError",
    ),
    (py("    return x * x"), CHECK, Status.CORRECT, 1.0, ""),
    (
        py("def sq(x):\n    return x * x"),
        CHECK,
        Status.CORRECT,
        1.0,
        "",
    ),  # full function also works
    (py("    return x + x + 1"), CHECK, Status.WRONG, 0.0, "AssertionError"),
    (py("import os\nos._exit(0)"), ASSERTS, Status.WRONG, 0.0, "before reporting"),
    # nested past the parser's depth: joining it to the prompt prefix raised in the grader
    (py("    return " + "1+" * 50_000 + "1"), CHECK, Status.WRONG, 0.0, "RecursionError"),
    (py("    return " + "-" * 50_000 + "1"), CHECK, Status.WRONG, 0.0, "MemoryError"),
    ("no code here", CALL, Status.FORMAT_ERROR, 0.0, "no fenced code block"),
    (py("x = 1"), {"style": "graphical"}, Status.ERROR, 0.0, "unscorable reference"),
    (py("x = 1"), {"style": "call", "cases": []}, Status.ERROR, 0.0, "unscorable reference"),
]


@pytest.mark.parametrize(("completion", "reference", "status", "score", "words"), TABLE)
def test_grading_table(verifier, completion, reference, status, score, words):
    verdict = verify(completion, reference, verifier)
    assert (verdict.status, verdict.score) == (status, score), verdict
    assert words in verdict.details, verdict


def test_rigged_eq_cannot_pass(verifier):
    rigged = "class Any:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Any()"
    assert verify(py(rigged), CALL, verifier).status is Status.WRONG


def test_fraction_reward_scores_share_of_tests():
    fraction = get_verifier("code", reward="fraction", test_time_limit_s=1.0)
    verdict = verify(py("def sq(x):\n    return x * 2"), ASSERTS, fraction)
    assert verdict.status is Status.WRONG and verdict.score == pytest.approx(1 / 3)


def test_at_most_max_tests_sampled_with_seed():
    cases = [{"args": [i], "expected": i} for i in range(50)]
    reference = {"style": "call", "fn_name": "ident", "cases": cases}
    seen = "def ident(x):\n    print(x)\n    return x"
    a = get_verifier("code", max_tests=5, seed=1)
    assert verify(py(seen), reference, a).details == "5/5 tests passed"
    assert verify(py(seen), dict(reference, max_tests=7), a).details == "7/7 tests passed"
    # the sample changes with the seed: a solution wrong only on some inputs shows it
    picky = "def ident(x):\n    return x if x % 2 else -1"
    scores = {
        verify(py(picky), reference, get_verifier("code", max_tests=3, seed=s, reward="fraction")).score
        for s in range(6)
    }
    assert len(scores) > 1


def test_time_limit_from_reference(verifier):
    slow = py("import time\ndef add(a, b):\n    time.sleep(0.5)\n    return a + b")
    assert verify(slow, CALL, verifier).status is Status.CORRECT
    verdict = verify(slow, dict(CALL, time_limit_s=0.2), verifier)
    assert verdict.status is Status.TIMEOUT and "per-test time limit" in verdict.details


def test_verifier_options_validated():
    with pytest.raises(ValueError, match="reward"):
        get_verifier("code", reward="most")
    with pytest.raises(ValueError, match="sandbox must be one of .*nsjail"):
        get_verifier("code", sandbox="docker")


def test_verifier_pickles(verifier):
    import pickle

    copy = pickle.loads(pickle.dumps(verifier))
    assert copy == verifier and verify(py("def add(a, b):\n    return a + b"), CALL, copy).is_correct


@pytest.mark.parametrize(
    ("got", "want", "tol", "equal"),
    [
        (1, 1, None, True),
        (True, 1, None, False),
        (0.1 + 0.2, 0.3, None, True),
        (1.0, 1.1, 0.2, True),
        ([1, [2.0]], [1, [2]], None, True),
        ({"a": 1}, {"a": 2}, None, False),
        ("1", 1, None, False),
    ],
)
def test_values_equal(got, want, tol, equal):
    assert values_equal(got, want, tol) is equal


@pytest.mark.parametrize(
    ("limit", "reference", "tests", "budget"),
    [
        (10.0, {}, 100, 10.0),  # a training reward's bound, whatever the tests
        (None, {}, 100, (5.0 + 1) * 100 + 5),  # evaluation: LiveCodeBench's rule
        (None, {"time_limit_s": 2}, 3, (2.0 + 1) * 3 + 5),  # the row's own per-test limit
    ],
)
def test_sample_budget_is_fixed_for_rewards_and_grows_with_the_tests_at_evaluation(limit, reference, tests, budget):
    verifier = get_verifier("code", sample_time_limit_s=limit)
    assert verifier._sample_budget(reference, tests) == budget
