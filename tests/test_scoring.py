"""The scorer: the judge graded once per batch, with the same verdicts as item by item."""

from __future__ import annotations

import json

import pytest

from rlvr.rewards.scoring import build_scorer, verify_batch
from verifiers import ReasoningFormat, verify
from verifiers.judge.backend import register_judge_backend
from verifiers.judge.verifier import make_judge

RUBRIC = "Grade it.\nResponse: {completion}\nEnd with 'Score: N'."


class CountingJudge:
    """Replies 'Score: 9' to a response that says "right", else 'Score: 1'; counts its calls."""

    identity = "counting"
    batches: list[int] = []

    def complete(self, messages):
        return self.complete_many([messages])[0]

    def complete_many(self, batch):
        CountingJudge.batches.append(len(batch))
        return ["Score: 9" if "Response: right" in json.dumps(m) else "Score: 1" for m in batch]


register_judge_backend("counting", lambda: CountingJudge())
OPTIONS = {"judge": {"backend": "counting", "rubric": RUBRIC}}
# completions and what the judge is shown: the answer after </think>, the format gate's verdict
COMPLETIONS = ["right", "wrong", "<think>hm</think>right", "<think>right</think>wrong", "<think>x"]


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("strip", [True, False])
def test_a_batch_through_verify_many_grades_as_each_item_through_verify(gate, strip):
    reasoning = ReasoningFormat(strip_think=strip, format_gate=gate)
    items = [(c, {"question": "q"}) for c in COMPLETIONS]
    single = [verify(c, r, make_judge(**OPTIONS["judge"]), reasoning) for c, r in items]
    CountingJudge.batches.clear()
    batched = verify_batch(make_judge(**OPTIONS["judge"]), items, reasoning)
    assert [(v.status, v.score) for v in batched] == [(v.status, v.score) for v in single]
    assert len(CountingJudge.batches) <= 1  # one backend call for the whole batch
    if gate:
        assert batched[0].status == "format_error"  # no </think>: never shown to the judge


def test_a_verifier_that_raises_gives_every_item_an_error_verdict():
    class Broken:
        def verify_many(self, completions, references):
            raise RuntimeError("backend gone")

    verdicts = verify_batch(Broken(), [("a", {}), ("b", {})], ReasoningFormat())
    assert [v.status for v in verdicts] == ["error", "error"]
    assert "backend gone" in verdicts[0].details


def test_the_scorer_calls_the_judge_once_per_batch_beside_pooled_verifiers():
    score = build_scorer(ReasoningFormat(), OPTIONS, workers=1, timeout_s=10.0)
    judged = [
        (f"<think>{i}</think>{'right' if i % 2 else 'wrong'} {i}", {"question": f"q{i}"}, "judge") for i in range(12)
    ]
    math = [("Answer: \\boxed{7}", {"answer": "7"}, "math"), ("Answer: 8", {"answer": "7"}, "math")]
    items = [*judged[:6], *math, *judged[6:]]
    CountingJudge.batches.clear()
    verdicts = score(items)
    assert CountingJudge.batches == [12]  # every distinct prompt in one call
    assert [v.score for v in verdicts[:6]] == [0.1 if i % 2 == 0 else 0.9 for i in range(6)]
    assert [v.status for v in verdicts[6:8]] == ["correct", "wrong"]  # the pool, as before
    assert verdicts[-1].status == "correct" and verdicts[-2].status == "wrong"
