"""Adaptive domain weights (mixture.mode=adaptive): the bandit's shares from reported signals,
the sampler's quotas from those shares, and their exact replay from saved reports."""

from __future__ import annotations

import math

import pytest

from rlvr.config import ConfigError
from rlvr.config.checks import mixture_adaptive
from rlvr.data.adaptive import AdaptiveSettings, AdaptiveWeights, batch_report
from rlvr.data.mixture import MixtureSampler
from rlvr.study.commands import compose

DOMAINS = ["code", "math", "science"]


def bandit(**settings) -> AdaptiveWeights:
    return AdaptiveWeights(DOMAINS, [1.0, 1.0, 2.0], AdaptiveSettings(**settings))


def feed(weights: AdaptiveWeights, batches: range, signal: dict[str, float], n: int = 16):
    for b in batches:
        weights.observe(b, {d: (signal[d] * n, n) for d in DOMAINS})


def test_shares_are_the_initial_weights_until_the_first_report_is_due():
    w = bandit(lag=3)
    for b in range(3):
        assert w.shares(b) == pytest.approx([0.25, 0.25, 0.5])


def test_the_domain_that_still_learns_gains_share_and_none_drops_below_the_floor():
    w = bandit(floor=0.05, exploration=0.1, lag=2)
    feed(w, range(10), {"code": 0.0, "math": 0.9, "science": 0.1})
    shares = dict(zip(DOMAINS, w.shares(11), strict=True))
    assert shares["math"] > 0.8
    assert min(shares.values()) >= 0.05 - 1e-12
    assert sum(shares.values()) == pytest.approx(1.0)


def test_exploration_lifts_a_rarely_seen_domain():
    few = {"code": (0.0, 1), "math": (50.0, 100), "science": (50.0, 100)}
    shares = {}
    for c in (0.0, 1.0):
        w = bandit(exploration=c, lag=1, window=1)
        w.observe(0, few)
        shares[c] = w.shares(1)[0]
    assert shares[1.0] > shares[0.0]


def test_shares_are_a_pure_function_of_the_reports():
    a, b = bandit(lag=2, window=3), bandit(lag=2, window=3)
    signal = {"code": 0.3, "math": 0.5, "science": 0.2}
    feed(a, range(8), signal)
    feed(b, reversed(range(8)), signal)  # arrival order does not matter
    assert [a.shares(x) for x in range(10)] == [b.shares(x) for x in range(10)]


def test_a_batch_drawn_before_its_inputs_arrived_fails_loudly():
    w = bandit(lag=2)
    feed(w, range(2), {d: 0.5 for d in DOMAINS})
    w.shares(3)  # reads batches 0 and 1
    with pytest.raises(RuntimeError, match="raise the lag"):
        w.shares(5)  # needs batch 3's report


def test_a_batch_reported_twice_must_agree():
    w = bandit()
    w.observe(0, {"math": (1.0, 2)})
    w.observe(0, {"math": (1.0, 2)})
    with pytest.raises(RuntimeError, match="reported twice"):
        w.observe(0, {"math": (1.5, 2)})


def test_saved_reports_restore_the_same_shares_and_refuse_other_settings():
    w = bandit(lag=2)
    feed(w, range(6), {"code": 0.1, "math": 0.7, "science": 0.4})
    state = w.state_dict(before_batch=5)
    assert sorted(map(int, state["reports"])) == [0, 1, 2, 3, 4]
    again = bandit(lag=2)
    again.load_state_dict(state)
    assert [again.shares(b) for b in range(7)] == [w.shares(b) for b in range(7)]
    with pytest.raises(ValueError, match="settings"):
        bandit(lag=3).load_state_dict(state)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"floor": 0.4}, "floor"),
        ({"temperature": 0.0}, "temperature"),
        ({"signal": "loss"}, "signal"),
        ({"window": 0}, "window"),
    ],
)
def test_bad_settings_name_the_knob(settings, message):
    with pytest.raises(ValueError, match=message):
        bandit(**settings)


def test_batch_report_sums_signal_per_domain():
    report = batch_report(["math", "math", "code", "code"], [1.5, -0.5, 0.0, 0.0], "abs_advantage")
    assert report == {"math": (2.0, 2, 0.0), "code": (0.0, 2, 0.0)}  # no rewards given: 0
    active = batch_report(["math", "math", "code"], [0.7, 0.0, -0.2], "active_groups")
    assert active == {"math": (1.0, 2, 0.0), "code": (1.0, 1, 0.0)}


def sampler(weights: AdaptiveWeights, batch_size: int = 20) -> MixtureSampler:
    rows = [d for d in DOMAINS for _ in range(60)]
    return MixtureSampler(
        rows,
        mini_repeat_count=2,
        batch_size=batch_size,
        mode="adaptive",
        adaptive=weights,
        num_batches=50,
    )


def batch_domains(s: MixtureSampler, n_batches: int) -> list[dict[str, int]]:
    rows = [d for d in DOMAINS for _ in range(60)]
    it, out = iter(s), []
    for _ in range(n_batches):
        idx = [next(it) for _ in range(s.batch_size * s.mini_repeat_count)][:: s.mini_repeat_count]
        out.append({d: sum(rows[i] == d for i in idx) for d in DOMAINS})
    return out


def test_the_sampler_fills_each_batch_by_the_adaptive_shares():
    w = bandit(lag=1, floor=0.1, exploration=0.0, temperature=0.05)
    s = sampler(w)
    first = batch_domains(s, 1)[0]
    assert first == {"code": 5, "math": 5, "science": 10}  # initial 1:1:2
    s.observe(0, {"code": (0.0, 10), "math": (9.0, 10), "science": (0.0, 20)})
    second = batch_domains(s, 1)[0]
    expected = [round(20 * x) for x in w.shares(1)]
    assert [second[d] for d in DOMAINS] == expected and second["math"] > 10
    assert s.weights_at_step(1) == dict(zip(DOMAINS, w.shares(1), strict=True))


def test_a_replayed_sampler_draws_the_same_stream_from_the_saved_reports():
    signal = {"code": 0.2, "math": 0.6, "science": 0.3}
    live = sampler(bandit(lag=1))
    it = iter(live)
    drawn = []
    for b in range(6):
        drawn += [next(it) for _ in range(40)]
        live.observe(b, {d: (signal[d] * (b + 1), 8) for d in DOMAINS})
    replay = sampler(bandit(lag=1))
    replay.adaptive.load_state_dict(live.adaptive.state_dict())
    it2 = iter(replay)
    assert [next(it2) for _ in range(240)] == drawn


def compose_run(*overrides: str):
    from omegaconf import OmegaConf

    return OmegaConf.to_object(compose([*overrides, "run_name=adaptive"]))


def test_config_builds_the_bandit_and_refuses_a_schedule_beside_it():
    run = compose_run("mixture=adaptive", "domains=[math,code]", "mixture.adaptive.floor=0.1")
    weights = mixture_adaptive(run)
    assert weights is not None and weights.domains == ["code", "math"]
    assert weights.settings.floor == 0.1 and math.isclose(sum(weights.initial), 1.0)
    with pytest.raises(ConfigError, match="floor"):
        mixture_adaptive(compose_run("mixture=adaptive", "domains=[math,code]", "mixture.adaptive.floor=0.6"))
    assert mixture_adaptive(compose_run("mixture=weighted")) is None


# -- in real GRPO runs on the tiny model ------------------------------------------------------
ADAPTIVE = [
    "mixture=adaptive",
    "domains=[math,science]",
    "+mixture.difficulty.math=1",
    "algo.prompts_per_step=4",
    "mixture.adaptive.lag=2",  # the data loader draws one batch ahead of training
    "mixture.adaptive.exploration=0.2",
]


@pytest.mark.slow
def test_weights_follow_the_signal_and_a_killed_run_resumes_them_exactly(tmp_path):
    """A policy that guesses two-option science questions and never answers math: science's
    groups disagree, math's all score 0, so science's share grows once its signal is due; a
    run killed after a checkpoint and resumed trains on the same prompts with the same weights."""
    import json

    from test_lora import guessing_model
    from test_resume import MAX_STEPS, finish, kill, records, run_dir, start, wait_for_checkpoint

    from rlvr.training.checkpoints import latest_complete_checkpoint

    cache = tmp_path / "cache"
    overrides = [*ADAPTIVE, f"init_from={guessing_model(cache, tmp_path / 'start')}"]
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"
    # the uninterrupted run goes beside the one to kill: tests run one at a time
    # on two cores, so each process gets a core of its own
    uninterrupted = start(straight_root, cache, *overrides)
    proc = start(broken_root, cache, *overrides)
    wait_for_checkpoint(broken_root, 2, proc)
    kill(proc)
    finish(uninterrupted, straight_root)
    straight = run_dir(straight_root)

    def logged(folder):
        rows = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
        return [r for r in rows if "loss" in r]

    steps = logged(straight)
    weights = {r["step"]: (r["math/mixture_weight"], r["science/mixture_weight"]) for r in steps}
    assert weights[1] == weights[2] == (0.5, 0.5)  # before the first report is due
    assert all(w[1] > w[0] for s, w in weights.items() if s > 2), weights
    assert min(min(w) for w in weights.values()) >= 0.05 - 1e-12
    assert all(r["math/adaptive_signal"] == 0.0 for r in steps if "math/adaptive_signal" in r)
    assert (straight / "checkpoints" / "checkpoint-2" / "mixture_adaptive.json").is_file()

    folder = run_dir(broken_root)
    done = int(latest_complete_checkpoint(folder / "checkpoints").name.split("-")[1])
    assert done < MAX_STEPS
    before = records(folder)
    finish(start(broken_root, cache, *overrides, "resume=true"), broken_root)
    stitched = {r["step"]: r["ids"] for r in before if r["step"] <= done}
    stitched.update({r["step"]: r["ids"] for r in records(folder)[len(before) :]})
    assert stitched == {r["step"]: r["ids"] for r in records(straight)}
    resumed = {
        r["step"]: (r["math/mixture_weight"], r["science/mixture_weight"])
        for r in logged(folder)[-(MAX_STEPS - done) :]
    }
    assert resumed == {s: w for s, w in weights.items() if s > done}


def _feed_rewards(weights: AdaptiveWeights, batches, signal: dict[str, float], reward: dict[str, float], n: int = 16):
    for b in batches:
        weights.observe(b, {d: (signal[d] * n, n, reward[d] * n) for d in DOMAINS})


def test_a_domain_whose_reward_falls_gets_its_initial_share_back_as_its_floor():
    w = bandit(floor=0.05, exploration=0.0, lag=1, window=2, guard_drop=0.05)
    learning = {"code": 0.0, "math": 0.9, "science": 0.1}  # the bandit pushes code to the floor
    _feed_rewards(w, range(6), learning, {"code": 0.6, "math": 0.5, "science": 0.5})
    assert w.guarded(6) == [] and w.shares(6)[0] == pytest.approx(0.05, abs=1e-3)
    _feed_rewards(w, range(6, 10), learning, {"code": 0.4, "math": 0.5, "science": 0.5})  # code forgets
    assert w.guarded(10) == ["code"]
    shares = dict(zip(DOMAINS, w.shares(10), strict=True))
    assert shares["code"] >= 0.25 - 1e-9  # its initial share, not the 5% floor
    assert sum(shares.values()) == pytest.approx(1.0)
    _feed_rewards(w, range(10, 14), learning, {"code": 0.58, "math": 0.5, "science": 0.5})  # recovered
    assert w.guarded(14) == []


def test_the_guard_is_off_at_zero_and_old_two_value_reports_still_load():
    off = bandit(lag=1, window=1, guard_drop=0.0)
    _feed_rewards(
        off, range(4), {"code": 0.1, "math": 0.1, "science": 0.1}, {"code": 0.9, "math": 0.5, "science": 0.5}
    )
    _feed_rewards(
        off, range(4, 6), {"code": 0.1, "math": 0.1, "science": 0.1}, {"code": 0.0, "math": 0.5, "science": 0.5}
    )
    assert off.guarded(6) == []
    old = bandit(lag=1, window=1)
    state = old.state_dict()
    state["reports"] = {"0": {"code": [1.0, 2]}}
    old.load_state_dict(state)
    assert old.reports[0]["code"] == (1.0, 2, 0.0)


def test_a_batch_report_carries_each_domains_reward_sum():
    report = batch_report(["math", "math", "code"], [1.0, -1.0, 0.0], "abs_advantage", [1.0, 0.0, 0.5])
    assert report == {"math": (2.0, 2, 1.0), "code": (0.0, 1, 0.5)}
