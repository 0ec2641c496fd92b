"""What assert-style tests may do across the judge/solution split, as (solution, test, expected) tables."""

from __future__ import annotations

import pytest

from verifiers import Status, get_verifier, verify


@pytest.fixture(scope="module")
def verifier():
    return get_verifier("code", test_time_limit_s=1.0, sample_time_limit_s=4.0, memory_mb=256)


def py(code: str) -> str:
    return f"```python\n{code}\n```"


POINT = "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
NODE = "class Node:\n    def __init__(self, v):\n        self.v, self.left, self.right = v, None, None\n"

TABLE = [
    # (solution, reference, status): features the remote proxies must support
    (
        POINT + "def dist(p, q):\n    return ((p.x - q.x) ** 2 + (p.y - q.y) ** 2) ** 0.5",
        {"test": "assert dist(Point(0, 0), Point(3, 4)) == 5.0\nassert Point(1, 2).y == 2"},
        Status.CORRECT,
    ),
    (
        NODE + "def depth(n):\n    return 0 if n is None else 1 + max(depth(n.left), depth(n.right))",
        {
            "setup": "root = Node(1)\nroot.left = Node(2)\nroot.left.right = Node(3)",
            "test": "assert depth(root) == 3\nassert root.left.right.v == 3",
        },
        Status.CORRECT,
    ),
    (
        "class Solution:\n    def twice(self, x, *, times=2):\n        return [x] * times",
        {"test": "s = Solution()\nassert s.twice(**{'x': 1, 'times': 3}) == [1, 1, 1]"},
        Status.CORRECT,
    ),
    (
        "def gen(n):\n    yield from range(n)",
        {"test": "assert list(gen(3)) == [0, 1, 2]\nassert [x for x in gen(2)] == [0, 1]"},
        Status.CORRECT,
    ),
    (
        "class Box:\n    def __init__(self, v):\n        self.v = v\n    def get(self):\n"
        "        return self.v\n    def __len__(self):\n        return 7\ndef make(v):\n    return Box(v)",
        {"test": "assert make(2).get() == 2\nassert len(make(1)) == 7\nassert make(1) != make(1)"},
        Status.CORRECT,
    ),
    (
        "def keep(items, kind):\n    return [x for x in items if isinstance(x, kind)]",
        {"test": "assert keep((1, 'a', 2.5), int) == [1]\nassert keep((1, 'a'), str) == ['a']"},
        Status.CORRECT,
    ),
    (
        "import sys\ndef size(t):\n    return sys.getsizeof(t)",
        {"test": "assert size((1, 2)) == sys.getsizeof((1, 2))"},
        Status.CORRECT,
    ),
    ("def sum(a, b):\n    return a + b", {"test": "assert sum(2, 3) == 5"}, Status.CORRECT),
    (
        "from collections import Counter\ndef freq(xs):\n    return Counter(xs)",
        {"test": "assert freq('aab') == {'a': 2, 'b': 1}"},
        Status.CORRECT,
    ),
    (
        "def inv(x):\n    if x == 0:\n        raise ValueError('zero')\n    return 1 / x",
        {"test": "try:\n    inv(0)\nexcept ValueError:\n    ok = True\nassert ok"},
        Status.CORRECT,
    ),
    (
        "class MyError(Exception):\n    pass\ndef inv(x):\n    raise MyError()",
        {"test": "try:\n    inv(0)\nexcept ValueError:\n    pass"},
        Status.WRONG,
    ),
    (
        "print('{\"unit\": 0, \"ok\": true}')\ndef add(a, b):\n    print('noise')\n    return a + b",
        {"test": "assert add(1, 2) == 3"},
        Status.CORRECT,
    ),
    ("def apply(f, x):\n    return f(x)", {"test": "assert apply(lambda v: v + 1, 1) == 2"}, Status.WRONG),
    ("def add(a, b):\n    return a + b", {"test": "assert add(1, 2) == 3\nassert mul(2, 2) == 4"}, Status.WRONG),
]


@pytest.mark.parametrize(("solution", "reference", "status"), TABLE)
def test_split_table(verifier, solution, reference, status):
    verdict = verify(py(solution), {"style": "assert", **reference}, verifier)
    assert verdict.status is status, verdict


def test_a_lambda_argument_is_reported():
    v = get_verifier("code", test_time_limit_s=1.0)
    ref = {"style": "assert", "test": "assert apply(lambda v: v + 1, 1) == 2"}
    verdict = verify(py("def apply(f, x):\n    return f(x)"), ref, v)
    assert "cannot be passed to the solution process" in verdict.details, verdict


SLOW_ON_2 = "import os, time\ndef f(x):\n    if x == 2:\n        time.sleep(5)\n    return x"
DIES_ON_1 = "import os\ndef f(x):\n    if x == 1:\n        os._exit(3)\n    return x"
THREE = {"style": "assert", "test": "assert f(1) == 1\nassert f(2) == 2\nassert f(3) == 3"}


@pytest.mark.parametrize(("solution", "score"), [(SLOW_ON_2, 2 / 3), (DIES_ON_1, 2 / 3)])
def test_fraction_reward_restarts_a_lost_solution_process(solution, score):
    v = get_verifier("code", reward="fraction", test_time_limit_s=0.5, sample_time_limit_s=4.0)
    verdict = verify(py(solution), THREE, v)
    assert verdict.score == pytest.approx(score), verdict


def test_all_reward_fails_the_rest_after_a_lost_solution_process(verifier):
    outcomes = verifier._run_assert(DIES_ON_1.replace("x == 1", "x == 2"), THREE)
    assert [o.passed for o in outcomes] == [True, False, False]
    assert "ended during a call" in outcomes[1].detail and "lost earlier" in outcomes[2].detail
