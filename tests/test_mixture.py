"""Mixture sampler: TRL grouping contract, per-step quotas, rank agreement, exact resume."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.data.mixture import MixtureSampler, apportion, heldout_mask, heldout_split
from rlvr.data.schedule import MixtureSchedule

DOMAINS = ["math"] * 50 + ["code"] * 20 + ["science"] * 7 + ["instruction"] * 13
WEIGHTS = {"math": 0.4, "code": 0.3, "science": 0.2, "instruction": 0.1}


def weighted(**kw) -> MixtureSampler:
    args = dict(mini_repeat_count=3, batch_size=8, repeat_count=2, mode="weighted", weights=WEIGHTS)
    args.update(kw)
    return MixtureSampler(DOMAINS, seed=7, **args)


def batches(sampler: MixtureSampler, stream: list[int]) -> list[list[int]]:
    """Recover the distinct prompts of each batch from a TRL-shaped stream, checking the shape."""
    span = sampler.batch_size * sampler.mini_repeat_count
    out = []
    for start in range(0, len(stream), span * sampler.repeat_count):
        block = stream[start : start + span]
        for r in range(1, sampler.repeat_count):  # the batch repeats verbatim repeat_count times
            assert stream[start + r * span : start + (r + 1) * span] == block
        prompts = block[:: sampler.mini_repeat_count]
        expanded = [i for i in prompts for _ in range(sampler.mini_repeat_count)]
        assert expanded == block  # each prompt repeated num_generations times consecutively
        out.append(prompts)
    return out


def test_natural_mode_matches_repeat_sampler_shape():
    sampler = MixtureSampler(list("abcdefg"), mini_repeat_count=2, batch_size=3, repeat_count=4)
    stream = list(sampler)
    assert len(stream) == len(sampler) == 2 * 3 * 2 * 4  # 7 // 3 full batches, as TRL
    got = batches(sampler, stream)
    flat = [i for b in got for i in b]
    assert len(set(flat)) == len(flat) == 6  # a permutation without the dropped tail
    assert list(sampler) != stream  # next pass is reshuffled


def test_natural_proportions_follow_dataset_sizes():
    sampler = MixtureSampler(DOMAINS, mini_repeat_count=1, batch_size=10, seed=3)
    counts = Counter(DOMAINS[i] for _ in range(20) for i in sampler)
    total = sum(counts.values())
    for domain, size in Counter(DOMAINS).items():
        assert abs(counts[domain] / total - size / len(DOMAINS)) < 0.01


@pytest.mark.parametrize("batch_size", [1, 3, 8, 10, 17])
def test_weighted_quotas_within_one_prompt_every_step(batch_size):
    sampler = weighted(batch_size=batch_size, repeat_count=1, num_batches=60)
    stream = list(sampler)
    cumulative = Counter()
    for step, prompts in enumerate(batches(sampler, stream), start=1):
        per_domain = Counter(DOMAINS[i] for i in prompts)
        cumulative.update(per_domain)
        for domain, w in WEIGHTS.items():
            assert abs(per_domain[domain] - batch_size * w) < 1.0
            assert abs(cumulative[domain] - step * batch_size * w) < 2.0


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.floats(0.01, 10.0), min_size=1, max_size=6),
    batch_size=st.integers(1, 64),
)
def test_apportion_property(weights, batch_size):
    total = sum(weights)
    norm = [w / total for w in weights]
    deficits = [0.0] * len(norm)
    for _ in range(40):
        quotas = apportion(norm, batch_size, deficits)
        assert sum(quotas) == batch_size
        assert all(abs(q - batch_size * w) < 1.0 for q, w in zip(quotas, norm, strict=True))
        deficits = [d + batch_size * w - q for d, w, q in zip(deficits, norm, quotas, strict=True)]
        assert max(abs(d) for d in deficits) < 2.0  # long-run share stays exact


def assert_cycled(got: list[list[int]], rows: list[int]) -> None:
    """After every batch, each row of the pool was drawn e or e+1 times: one pass per epoch."""
    counts = Counter({i: 0 for i in rows})
    for prompts in got:
        counts.update(i for i in prompts if i in counts)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_weighted_pools_cycle_each_domain_completely():
    sampler = weighted(repeat_count=1, num_batches=50)
    got = batches(sampler, list(sampler))
    science = [i for i, d in enumerate(DOMAINS) if d == "science"]
    assert_cycled(got, science)
    drawn = [i for b in got for i in b if DOMAINS[i] == "science"]
    assert drawn[7:14] != drawn[:7]  # reshuffled for the next epoch


def test_batches_never_repeat_a_prompt_across_epoch_boundaries():
    domains = ["a"] * 5 + ["b"] * 50  # pool "a" restarts inside a batch every few steps
    sampler = MixtureSampler(domains, 1, 4, mode="weighted", weights={"a": 0.5, "b": 0.5}, num_batches=400)
    got = batches(sampler, list(sampler))
    assert all(len(set(b)) == len(b) for b in got)
    assert_cycled(got, list(range(5)))  # the swaps keep every row of "a" once per epoch


def test_two_ranks_see_identical_streams():
    rank0, rank1 = weighted(), weighted()
    assert list(itertools.islice(rank0, 500)) == list(itertools.islice(rank1, 500))
    other_seed = MixtureSampler(
        DOMAINS, 3, 8, 2, mode="weighted", weights=WEIGHTS, seed=8
    )  # a different seed must change the stream, or the equality above proves nothing
    assert list(itertools.islice(other_seed, 500)) != list(itertools.islice(weighted(), 500))


@pytest.mark.parametrize("mode", ["natural", "weighted"])
@pytest.mark.parametrize("cut", [0, 5, 48, 97, 250])
def test_save_restore_continues_exact_stream(mode, cut):
    kw = {"weights": WEIGHTS} if mode == "weighted" else {}
    make = lambda: MixtureSampler(DOMAINS, 3, 8, 2, mode=mode, seed=11, **kw)  # noqa: E731
    reference = make()
    expected = [i for _ in range(3) for i in reference]  # three passes
    first = make()
    it = iter(first)
    consumed = []
    while len(consumed) < cut:
        try:
            consumed.append(next(it))
        except StopIteration:
            it = iter(first)
    state = json.loads(json.dumps(first.state_dict()))  # survives a checkpoint file
    resumed = make()
    resumed.load_state_dict(state)
    rest = []
    while len(consumed) + len(rest) < len(expected):
        rest += list(resumed)
    assert consumed + rest == expected


def test_load_rejects_state_of_other_settings():
    state = weighted().state_dict()
    with pytest.raises(ValueError, match="different dataset"):
        weighted(batch_size=4).load_state_dict(state)


def test_set_epoch_replays_the_pass_for_trainer_skipping():
    sampler = weighted()
    passes = [list(sampler) for _ in range(3)]
    fresh = weighted()
    fresh.set_epoch(2)
    assert list(fresh) == passes[2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "mixed"}, "unknown mixture mode"),
        ({"mode": "weighted"}, "needs per-domain weights"),
        ({"mode": "weighted", "weights": {"agent": 1.0}}, "no rows"),
        ({"mode": "weighted", "weights": {"math": -1.0}}, ">= 0"),
        ({"mode": "natural", "weights": {"math": 1.0}}, "takes no weights"),
    ],
)
def test_bad_settings_fail_with_a_named_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MixtureSampler(DOMAINS, 2, 4, **kwargs)


def test_zero_weight_domain_is_never_sampled():
    sampler = weighted(weights={"math": 1.0, "code": 0.0})
    assert {DOMAINS[i] for i in sampler} == {"math"}


def test_heldout_split_by_id_never_overlaps_and_is_stable():
    rows = [{"id": f"row-{i % 900}", "n": i} for i in range(1000)]  # 100 duplicated ids
    train, held = heldout_split(rows, 0.2, seed=1)
    assert not {r["id"] for r in train} & {r["id"] for r in held}
    assert len(train) + len(held) == len(rows)
    assert math.isclose(len(held) / len(rows), 0.2, abs_tol=0.05)
    assert heldout_split(rows, 0.2, seed=1) == (train, held)
    assert heldout_split(rows, 0.2, seed=2)[1] != held
    assert heldout_mask(["a", "b"], 0.0) == [False, False]
    assert heldout_mask(["a", "b"], 1.0) == [True, True]


def test_works_as_a_torch_dataloader_sampler():
    import torch.utils.data as torch_data

    sampler = weighted()
    expected = list(weighted())
    loader = torch_data.DataLoader(list(range(len(DOMAINS))), sampler=sampler, batch_size=6)
    got = [int(i) for batch in loader for i in batch]
    assert got == expected and len(loader) == len(sampler) // 6


# -- scheduled mixtures (rlvr.data.schedule) ---------------------------------------------------
SCHEDULE_DOMAINS = ["math"] * 40 + ["code"] * 30 + ["science"] * 20


def scheduled(kind="piecewise", points=None, **kw) -> MixtureSampler:
    points = points or [
        (0, {"math": 3, "code": 1, "science": 0}),
        (4, {"math": 0, "code": 1, "science": 1}),
    ]
    args = dict(mini_repeat_count=2, batch_size=4, repeat_count=1, num_batches=12, seed=5)
    args.update(kw)
    schedule = MixtureSchedule.from_points(kind, points)
    return MixtureSampler(SCHEDULE_DOMAINS, mode="weighted", schedule=schedule, **args)


def quotas(sampler: MixtureSampler) -> list[dict[str, int]]:
    counts = [Counter(SCHEDULE_DOMAINS[i] for i in b) for b in batches(sampler, list(sampler))]
    return [{d: c[d] for d in ("math", "code", "science")} for c in counts]


def test_piecewise_schedule_switches_quotas_at_the_configured_step():
    got = quotas(scheduled())
    assert got[:4] == [{"math": 3, "code": 1, "science": 0}] * 4
    assert got[4:] == [{"math": 0, "code": 2, "science": 2}] * 8
    assert scheduled().weights_at_step(3) == {"code": 0.25, "math": 0.75, "science": 0.0}
    assert scheduled().weights_at_step(4) == {"code": 0.5, "math": 0.0, "science": 0.5}


def test_schedule_steps_count_optimiser_steps_not_batches():
    """Two updates per batch (num_iterations=2): the step-4 point starts batch 2."""
    sampler = scheduled(steps_per_batch=2, repeat_count=2)
    got = quotas(sampler)
    assert got[:2] == [{"math": 3, "code": 1, "science": 0}] * 2
    assert got[2] == {"math": 0, "code": 2, "science": 2}
    assert sampler.weights_at_step(5) == sampler.weights_at_step(4)


def test_linear_schedule_moves_quotas_step_by_step():
    points = [(0, {"math": 1, "code": 0, "science": 0}), (8, {"math": 0, "code": 0, "science": 1})]
    sampler = scheduled("linear", points, batch_size=8, num_batches=12)
    got = quotas(sampler)
    assert [q["science"] for q in got] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8]
    assert all(q["math"] + q["science"] == 8 and q["code"] == 0 for q in got)


@settings(max_examples=40, deadline=None)
@given(
    start=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3).filter(lambda w: sum(w) > 0),
    end=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3).filter(lambda w: sum(w) > 0),
    span=st.integers(1, 30),
    batch_size=st.integers(1, 16),
)
def test_scheduled_quotas_track_the_moving_target(start, end, span, batch_size):
    names = ("math", "code", "science")
    points = [(0, dict(zip(names, start, strict=True))), (span, dict(zip(names, end, strict=True)))]
    sampler = scheduled("linear", points, batch_size=batch_size, num_batches=40)
    target = Counter()
    drawn = Counter()
    for step, q in enumerate(quotas(sampler)):
        shares = {d: sampler.weights_at_step(step).get(d, 0.0) for d in names}
        for d in names:
            target[d] += batch_size * shares[d]
            drawn[d] += q[d]
            # every step within one prompt: floor(B*w) or one more (a bound on the integers, so
            # a share of 1e-19 rounding B*w - 1 to -1.0 in floats cannot fail it)
            floor = math.floor(batch_size * shares[d] + 1e-9)
            assert floor <= q[d] <= floor + 1
            assert q[d] == 0 or shares[d] > 0  # a paused domain is never drawn
            assert abs(drawn[d] - target[d]) < 2.0  # and the long-run share stays on target


@pytest.mark.parametrize("cut", [0, 9, 40, 63])
def test_scheduled_save_restore_continues_exact_stream(cut):
    expected = list(scheduled())
    first = scheduled()
    it = iter(first)
    consumed = [next(it) for _ in range(cut)]
    state = json.loads(json.dumps(first.state_dict()))
    assert state["version"] == 2 and state["step"] == first._cursor.step
    resumed = scheduled()
    resumed.load_state_dict(state)
    assert consumed + list(resumed) == expected


def test_state_versions_and_schedules_are_checked_on_load():
    plain = weighted()
    v1 = {k: v for k, v in plain.state_dict().items() if k != "step"} | {"version": 1}
    weighted().load_state_dict(v1)  # a version-1 state resumes an unscheduled mixture
    with pytest.raises(ValueError, match="predates mixture schedules"):
        scheduled().load_state_dict({**scheduled().state_dict(), "version": 1})
    with pytest.raises(ValueError, match="version 3"):
        weighted().load_state_dict({**plain.state_dict(), "version": 3})
    other = scheduled(points=[(0, {"math": 1, "code": 1, "science": 1})])
    with pytest.raises(ValueError, match="schedule"):
        other.load_state_dict(scheduled().state_dict())


def test_schedule_needs_weighted_mode_without_fixed_weights():
    schedule = MixtureSchedule.from_points("piecewise", [(0, {"math": 1})])
    with pytest.raises(ValueError, match="needs mode 'weighted'"):
        MixtureSampler(SCHEDULE_DOMAINS, 2, 4, schedule=schedule)
    with pytest.raises(ValueError, match="no fixed weights"):
        MixtureSampler(SCHEDULE_DOMAINS, 2, 4, mode="weighted", weights=WEIGHTS, schedule=schedule)
