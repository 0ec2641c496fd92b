"""Reward bridge: per-domain routing on a mixed batch, error budget, per-domain metrics."""

from __future__ import annotations

import json
import logging

import pytest

from rlvr.rewards.bridge import (
    ErrorBudget,
    StepTimer,
    VerifierInfrastructureError,
    build_reward_functions,
    domain_metrics,
    group_zero_variance_fraction,
)
from rlvr.rewards.scoring import sequential_scorer
from verifiers import ReasoningFormat, Status, Verdict

IFEVAL_NO_COMMA = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}], "prompt": "p"}

# (domain, verifier, completion, reference, expected score): a mixed batch of three domains,
# interleaved as a mixture sampler would deliver them, right and wrong answers in each.
MIXED = [
    ("math", "math", "<think>3+4</think>The answer is \\boxed{7}", {"answer": "7"}, 1.0),
    ("science", "science_mcq", "Answer: C", {"answer": "C", "num_options": 4}, 1.0),
    ("instruction", "ifeval", "no commas here at all", IFEVAL_NO_COMMA, 1.0),
    ("math", "math", "The answer is \\boxed{8}", {"answer": "7"}, 0.0),
    ("science", "science_mcq", "Answer: A", {"answer": "C", "num_options": 4}, 0.0),
    ("instruction", "ifeval", "one, two, three", IFEVAL_NO_COMMA, 0.0),
    ("math", "math", "Answer: 1/2", {"answer": "\\frac{1}{2}"}, 1.0),
    ("science", "science_mcq", "I cannot decide", {"answer": "B", "num_options": 4}, 0.0),
]
DOMAINS = ["instruction", "math", "science"]


def batch_kwargs(rows) -> dict:
    return {
        "domain": [r[0] for r in rows],
        "verifier": [r[1] for r in rows],
        "reference": [json.dumps(r[3]) for r in rows],
        "id": [f"{r[0]}-{i}" for i, r in enumerate(rows)],
    }


def call_all(funcs, rows, **extra) -> list[list[float | None]]:
    completions = [r[2] for r in rows]
    prompts = ["q"] * len(rows)
    return [f(prompts, completions, **batch_kwargs(rows), **extra) for f in funcs]


def assert_routed(outputs: list[list[float | None]], names: list[str], rows) -> None:
    for i, (domain, _, _, _, expected) in enumerate(rows):
        column = {name: out[i] for name, out in zip(names, outputs, strict=True)}
        scored = {name: v for name, v in column.items() if v is not None}
        assert list(scored) == [f"reward_{domain}"], f"row {i}: {column}"
        assert scored[f"reward_{domain}"] == pytest.approx(expected), f"row {i}"
        assert isinstance(scored[f"reward_{domain}"], float)


def make_funcs(scorer, budget=None):
    budget = budget or ErrorBudget(max_rate=0.05, min_samples=32)
    return build_reward_functions(DOMAINS, scorer, budget, StepTimer()), budget


def test_mixed_batch_routes_each_row_to_exactly_one_domain_function():
    funcs, budget = make_funcs(sequential_scorer(ReasoningFormat()))
    names = [f.__name__ for f in funcs]
    assert names == ["reward_instruction", "reward_math", "reward_science"]
    assert_routed(call_all(funcs, MIXED), names, MIXED)
    assert dict(budget.seen) == {"math": 3, "science": 3, "instruction": 2}
    assert sum(budget.errors.values()) == 0


def test_mixed_batch_through_the_worker_pool_scorer_matches_in_process_scoring():
    from rlvr.rewards.scoring import build_scorer

    reasoning = ReasoningFormat()
    pooled, _ = make_funcs(build_scorer(reasoning, {}, workers=1, timeout_s=10.0))
    names = [f.__name__ for f in pooled]
    outputs = call_all(pooled, MIXED)
    assert_routed(outputs, names, MIXED)
    local, _ = make_funcs(sequential_scorer(reasoning))
    assert outputs == call_all(local, MIXED)


def test_a_batch_is_scored_in_one_scorer_call_for_every_domain():
    local = sequential_scorer(ReasoningFormat())
    calls: list[int] = []

    def counted(items):
        calls.append(len(items))
        return local(items)

    funcs, _ = make_funcs(counted)
    assert_routed(call_all(funcs, MIXED), [f.__name__ for f in funcs], MIXED)
    assert calls == [len(MIXED)]  # all three domains graded together, once
    call_all(funcs, MIXED)  # a new batch (a new completions list) is scored again
    assert calls == [len(MIXED), len(MIXED)]


def test_single_domain_batch_leaves_other_functions_all_none():
    rows = [r for r in MIXED if r[0] == "math"]
    funcs, _ = make_funcs(sequential_scorer(ReasoningFormat()))
    out = dict(zip([f.__name__ for f in funcs], call_all(funcs, rows), strict=True))
    assert out["reward_instruction"] == [None] * len(rows)
    assert out["reward_science"] == [None] * len(rows)
    assert out["reward_math"] == [r[4] for r in rows]


def test_format_gate_scores_missing_think_close_as_format_error():
    rows = [
        ("math", "math", "<think>ok</think>\\boxed{7}", {"answer": "7"}, 1.0),
        ("math", "math", "\\boxed{7}", {"answer": "7"}, 0.0),
    ]
    gated = sequential_scorer(ReasoningFormat(format_gate=True))
    verdicts = gated([(c, ref, v) for _, v, c, ref, _ in rows])
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.FORMAT_ERROR]
    funcs, _ = make_funcs(gated)
    assert_routed(call_all(funcs, rows), [f.__name__ for f in funcs], rows)


def test_metrics_and_completions_table_are_emitted_per_domain():
    funcs, _ = make_funcs(sequential_scorer(ReasoningFormat()))
    logged: dict[str, list[float]] = {}
    table: dict[str, list] = {}
    call_all(
        funcs,
        MIXED,
        log_metric=lambda k, v: logged.setdefault(k, []).append(v),
        log_extra=lambda k, v: table.__setitem__(k, v),
        completion_ids=[[0] * (i + 1) for i in range(len(MIXED))],
    )
    assert logged["math/count"] == [3.0]
    assert logged["math/pass_rate"] == [pytest.approx(2 / 3)]
    assert logged["science/format_error_rate"] == [pytest.approx(1 / 3)]
    assert logged["instruction/reward_mean"] == [pytest.approx(0.5)]
    # completion_ids lengths are 1..8: math rows are 0, 3, 6 -> lengths 1, 4, 7
    assert logged["math/completion_length"] == [pytest.approx(4.0)]
    assert set(table) == {"domain", "verifier", "status", "extracted", "score"}
    assert table["domain"] == [r[0] for r in MIXED]
    assert table["verifier"] == [r[1] for r in MIXED]
    assert table["score"] == [r[4] for r in MIXED]
    assert table["status"][7] == "format_error"


# References the verifiers cannot score: each yields an ``error`` verdict (infrastructure or
# data bug), never a plain wrong answer.
UNSCORABLE = [
    ("math", "math", "\\boxed{7}", {"answer": ""}),
    ("science", "science_mcq", "Answer: A", {"answer": "Z", "num_options": 4}),
    (
        "instruction",
        "ifeval",
        "hello",
        {"instruction_id_list": ["no_such:instruction"], "kwargs": [{}], "prompt": "p"},
    ),
]


@pytest.mark.parametrize(("domain", "verifier", "completion", "reference"), UNSCORABLE)
def test_unscorable_reference_is_an_error_verdict(domain, verifier, completion, reference):
    (verdict,) = sequential_scorer(ReasoningFormat())([(completion, reference, verifier)])
    assert verdict.status is Status.ERROR


def test_errors_below_min_samples_are_counted_and_logged_not_raised(caplog):
    budget = ErrorBudget(max_rate=0.25, min_samples=8)
    funcs, _ = make_funcs(sequential_scorer(ReasoningFormat()), budget)
    rows = [(*UNSCORABLE[0], 0.0), *(r for r in MIXED if r[0] == "math")]
    logged: dict[str, float] = {}
    with caplog.at_level(logging.WARNING, logger="rlvr.rewards.bridge"):
        call_all(funcs, rows, log_metric=logged.__setitem__)
    assert budget.errors["math"] == 1 and budget.seen["math"] == 4
    assert logged["math/verifier_error_rate"] == pytest.approx(1 / 4)
    assert any("math: 1 verifier errors" in r.getMessage() for r in caplog.records)


def test_error_rate_above_limit_aborts_after_min_samples_per_domain():
    budget = ErrorBudget(max_rate=0.25, min_samples=6)
    funcs, _ = make_funcs(sequential_scorer(ReasoningFormat()), budget)
    bad_math = [(*UNSCORABLE[0], 0.0)] * 2
    good_science = [r for r in MIXED if r[0] == "science"]
    # batch 1: 2 errors in 2 math rows; under min_samples, so counted only
    call_all(funcs, bad_math + good_science)
    assert budget.errors["math"] == 2
    # batch 2: the science domain stays healthy and never raises
    call_all(funcs, good_science)
    assert budget.errors["science"] == 0
    # batch 3: math reaches 6 samples with 2 errors (33% > 25%): abort naming the domain
    good_math = [r for r in MIXED if r[0] == "math"] + [MIXED[0]]
    with pytest.raises(VerifierInfrastructureError, match=r"math: 2/6 .*max_infra_error_rate"):
        call_all(funcs, good_math)


def test_error_rate_equal_to_limit_continues_above_it_aborts():
    budget = ErrorBudget(max_rate=0.5, min_samples=2)
    budget.record("code", [Verdict.error("worker died"), Verdict.correct("x")])
    with pytest.raises(VerifierInfrastructureError, match="code: 2/3"):
        budget.record("code", [Verdict.error("worker died")])


def test_abort_happens_before_any_score_is_returned():
    budget = ErrorBudget(max_rate=0.0, min_samples=1)
    funcs, _ = make_funcs(sequential_scorer(ReasoningFormat()), budget)
    rows = [(*UNSCORABLE[1], 0.0)]
    with pytest.raises(VerifierInfrastructureError, match="science"):
        call_all(funcs, rows)


def verdicts(pattern: str) -> list[Verdict]:
    make = {
        "1": lambda: Verdict.correct("x"),
        "0": lambda: Verdict.wrong("y"),
        "f": lambda: Verdict.format_error("no answer"),
        "t": lambda: Verdict.timeout("slow"),
        "e": lambda: Verdict.error("boom"),
    }
    return [make[c]() for c in pattern]


# (statuses per completion, group ids, expected pass, format, timeout, error, zero-var)
METRIC_CASES = [
    ("1111" + "100f", "aaaa" + "bbbb", 5 / 8, 1 / 8, 0.0, 0.0, 1 / 2),
    ("0000" + "ffff" + "10t0", "aaaa" + "bbbb" + "cccc", 1 / 12, 4 / 12, 1 / 12, 0.0, 2 / 3),
    ("1e" + "00", "aa" + "bb", 1 / 4, 0.0, 0.0, 1 / 4, 1 / 2),
    ("10", "ab", 1 / 2, 0.0, 0.0, 0.0, 0.0),  # singleton groups carry no variance signal
]


@pytest.mark.parametrize(("pattern", "groups", "pass_", "fmt", "tmo", "err", "zv"), METRIC_CASES)
def test_domain_metrics_on_hand_built_batches(pattern, groups, pass_, fmt, tmo, err, zv):
    vs = verdicts(pattern)
    lengths = list(range(1, len(vs) + 1))
    m = domain_metrics("math", vs, lengths, list(groups))
    assert m["math/count"] == len(vs)
    assert m["math/pass_rate"] == pytest.approx(pass_)
    assert m["math/reward_mean"] == pytest.approx(pass_)  # binary scores
    assert m["math/format_error_rate"] == pytest.approx(fmt)
    assert m["math/timeout_rate"] == pytest.approx(tmo)
    assert m["math/verifier_error_rate"] == pytest.approx(err)
    assert m["math/zero_variance_group_frac"] == pytest.approx(zv)
    assert m["math/completion_length"] == pytest.approx(sum(lengths) / len(lengths))


def test_zero_variance_uses_scores_not_statuses():
    # wrong and format_error both score 0: the group gives no gradient signal
    assert group_zero_variance_fraction(["a", "a"], [0.0, 0.0]) == 1.0
    assert group_zero_variance_fraction(["a", "a", "b", "b"], [0.5, 0.5, 0.0, 1.0]) == 0.5
