"""The parallel reward combiner: presets, terms, invalid structure, bridge metrics, P-GRPO."""

from __future__ import annotations

import json

import pytest

from rlvr.config import register_configs
from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
from rlvr.rewards.parallel import (
    PRESETS,
    ParallelReward,
    ParallelRewardError,
    RewardTerms,
    combine,
    measure,
    reward_terms,
)
from rlvr.runs.cli import CONF_DIR, register_resolvers
from verifiers import Verdict

O2 = "<Outlines><Outline>1: a</Outline><Outline>2: b</Outline></Outlines>"
T1, T2 = "<Thread>1: aaaa</Thread>", "<Thread>2: bbbbbbbbbbbbbbb</Thread>"  # 24, 35 chars
# head 77 + threads 59 + tail 11 + 53 = 200 characters, critical path 200 - 24 = 176
PAR = "<Parallel>" + O2 + T1 + T2 + "</Parallel>" + "j" * 53
SEQ = "x" * 100
BAD = PAR.replace("</Parallel>", "")
TRIAL = PAR.replace("1: a<", "1: try a<")  # 204 characters, thread 1 a trial
RIGHT, WRONG = Verdict.correct("3"), Verdict.wrong("4")
TW = PRESETS["threadweaver"]


@pytest.fixture
def compose():
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        yield lambda overrides: hydra_compose("train", overrides=["run_name=t", *overrides])


def test_fixture_lengths():
    m = measure(PAR)
    assert (m.total, m.critical_path) == (200, 176) and m.eta == pytest.approx(0.12)
    assert m.acceleration == pytest.approx(200 / 176)


# (terms, verdict, text, latency_norm, expected reward)
TABLE = [
    (TW, RIGHT, PAR, 0, 1.0 + 0.5 * 0.12),  # 1{correct} + min(rho*eta, clip)
    (TW, WRONG, PAR, 0, 0.0),  # no bonus without correctness
    (TW, RIGHT, SEQ, 0, 1.0),  # sequential: eta 0
    (TW, RIGHT, BAD, 0, 1.0),  # malformed: no bonus, correctness counts
    (RewardTerms(rho=5.0, rho_clip=0.2), RIGHT, PAR, 0, 1.2),  # the clip binds
    (PRESETS["none"], RIGHT, PAR, 0, 1.0),
    # parason: 1 - latency * L_crit/L_norm + subtask * S_sub + trial * S_trial
    (PRESETS["parason"], RIGHT, PAR, 352, 1.0 - 0.2 * 176 / 352 + 0.1 * 59 / 200),
    (PRESETS["parason"], RIGHT, SEQ, 50, 1.0 - 0.2 * 1.0),  # latency share capped at 1
    (PRESETS["parason"], WRONG, SEQ, 50, 0.0),
    (PRESETS["parason"], RIGHT, TRIAL, 352, 1 - 0.2 * 180 / 352 + 0.1 * 35 / 204 + 0.05 * 24 / 204),
    (RewardTerms(malformed=0.5), WRONG, BAD, 0, -0.5),
    (RewardTerms(correct=2.0), Verdict.correct(score=0.5), SEQ, 0, 1.0),
]


@pytest.mark.parametrize(("terms", "verdict", "text", "norm", "expected"), TABLE)
def test_combine(terms, verdict, text, norm, expected):
    assert combine(terms, verdict, measure(text), norm) == pytest.approx(expected)


def test_thread_shares_split_subtask_and_trial():
    m = measure(TRIAL)
    assert (m.subtask, m.trial) == (len(T2), len(T1))  # the outline names the trial


def test_reward_terms_override_and_name_the_known_ones():
    assert reward_terms("threadweaver", {"rho": 1}).rho == 1.0
    assert reward_terms("threadweaver", {"rho": 1}).rho_clip == 0.2
    with pytest.raises(ParallelRewardError, match="presets: none, threadweaver, parason"):
        reward_terms("fast")
    with pytest.raises(ParallelRewardError, match="terms: correct, rho"):
        reward_terms("parason", {"speed": 1.0})


def test_bridge_applies_the_combiner_and_logs_parallel_metrics():
    logged: dict[str, float] = {}

    def scorer(items):
        return [RIGHT if "Answer: 3" in c else WRONG for c, _, _ in items]

    parallel = ParallelReward(TW, len, 64.0)
    (fn,) = build_reward_functions(["math"], scorer, ErrorBudget(0.5, 100), StepTimer(), parallel=parallel)
    texts = [PAR + "Answer: 3", SEQ + "Answer: 3", PAR + "Answer: 4", "<Thread>x"]
    out = fn(
        prompts=[""] * 4,
        completions=texts,
        domain=["math"] * 4,
        verifier=["math"] * 4,
        reference=[json.dumps({"answer": "3"})] * 4,
        log_metric=logged.__setitem__,
    )
    eta = measure(texts[0]).eta
    assert out == pytest.approx([1.0 + 0.5 * eta, 1.0, 0.0, 0.0])
    assert logged["math/parallel/valid_block_rate"] == 0.5
    assert logged["math/parallel/malformed_rate"] == 0.25
    assert logged["math/parallel/acceleration"] > 1.0
    assert logged["math/parallel/reward_delta"] == pytest.approx(0.5 * eta / 4)
    assert logged["math/pass_rate"] == 0.5  # the domain's own metrics stay the verifier's


def test_p_grpo_preset_maps_to_mean_centred_advantages(tmp_path, compose):
    """TRL 1.16 with scale_rewards=none and sum_then_normalize: A = r - mean_group(r)."""
    from rlvr.config import to_config
    from rlvr.training.trainer_args import build_grpo_config

    run = to_config(compose(["algo=p_grpo"]))
    assert run.algo.parallel_reward.preset == "threadweaver"
    args = build_grpo_config(run, tmp_path)
    assert args.scale_rewards == "none"
    assert args.multi_objective_aggregation == "sum_then_normalize"


def test_trl_forms_advantages_without_std_when_scale_rewards_is_none():
    """The lines of TRL 1.16's ``_generate_and_score_completions`` P-GRPO relies on: the
    advantage is the reward minus its group mean, divided by std only unless "none"."""
    import inspect

    from trl.trainer import grpo_trainer

    source = inspect.getsource(grpo_trainer.GRPOTrainer._generate_and_score_completions)
    assert "advantages = rewards - mean_grouped_rewards" in source
    assert 'if self.scale_rewards != "none":' in source
    assert "advantages = advantages / (std_rewards + 1e-4)" in source


def test_unknown_preset_fails_the_config_check(compose):
    from rlvr.config import ConfigError, to_config

    with pytest.raises(ConfigError, match="presets: none, threadweaver, parason"):
        to_config(compose(["algo.parallel_reward.preset=fastest"]))
    with pytest.raises(ConfigError, match="unknown \\['speed'\\]"):
        to_config(compose(["+algo.parallel_reward.terms.speed=1"]))
