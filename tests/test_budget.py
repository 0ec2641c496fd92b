"""Time against the budget: the step estimate's forwards and decode bounds, each SLURM stage's
estimate against its time limit x (1 + requeues), GPU-hours beside the paper's, per-kind SLURM
resources, and ddp_timeout from the plan's step time."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig
from rlvr.planning import model_shape, plan_stage
from rlvr.planning.budget import StageBudget, check_budgets, ddp_timeout
from rlvr.planning.step_time import rows_in_flight, sampling_seconds
from rlvr.study.__main__ import budget_text, plan
from rlvr.study.commands import compose, stage_config, user_overrides

M2RL = ["experiment=m2rl_study"]


def composed(*overrides: str) -> RunConfig:
    return OmegaConf.to_object(compose([*overrides, "run_name=plan"]))  # type: ignore[return-value]


@pytest.fixture(scope="module")
def m2rl(tmp_path_factory):
    return plan([*M2RL, f"study.out_dir={tmp_path_factory.mktemp('m2rl')}"])


def expert(**trainer) -> RunConfig:
    """The M2RL expert's stage config, with ``trainer`` settings replaced."""
    run = composed("experiment=m2rl_study", "domains=[m2rl/math]")
    return replace(run, trainer=replace(run.trainer, **trainer))


def step(run: RunConfig) -> float:
    seconds = plan_stage(run, "expert", "expert", 8).step_seconds
    assert seconds is not None
    return seconds


def test_the_importance_sampling_forward_is_counted():
    run = expert()
    off = replace(run, algo=replace(run.algo, vllm_importance_sampling_correction=False))
    assert step(run) > step(off)


def test_decode_is_bound_by_bandwidth_and_kv_capacity():
    run = expert()
    flops_only = expert(device_bandwidth_gbs=None)
    assert step(run) > step(flops_only)  # the weights and KV cache read per token cost more
    p = plan_stage(run, "expert", "expert", 8)
    w, shape = p.workload, model_shape(run.model)
    rows = w.generation_rows
    small = replace(w, vllm_share=0.2)
    large = replace(w, vllm_share=0.6)
    # a colocated engine's share (without the stage's parts: the share as given) bounds the
    # rows in flight; fewer rows at once take more waves
    assert 1 <= rows_in_flight(run, shape, small, rows) < rows_in_flight(run, shape, large, rows)
    assert sampling_seconds(run, shape, small, rows) > sampling_seconds(run, shape, large, rows)
    # with the stage's planned parts, the engine rlvr.planning.vllm sizes beside training
    assert rows_in_flight(run, shape, w, rows, p.parts) < rows
    # a shorter planned completion holds more rows at once and decodes fewer tokens
    short = expert(plan_completion_tokens=8192)
    assert step(short) < step(run) / 2


def test_a_stage_over_its_budget_fails_naming_the_fix():
    b = StageBudget("expert_math", "expert", 8, 1, 200, 80 * 60, 2880, 3, 20, 85, 6600)
    assert not b.fits and b.hours > b.budget_hours
    with pytest.raises(ConfigError) as err:
        check_budgets([b])
    message = str(err.value)
    assert "stage expert_math needs ~267 h on 1 node(s) of 8 GPUs" in message
    assert "48 h x (1 + 3) = 192 h" in message
    need = int(re.search(r"slurm_max_num_timeout=(\d+)", message).group(1))
    assert replace(b, requeues=need).fits and not replace(b, requeues=need - 1).fits
    assert "timeout_min" in message and "nodes" in message and "fewer steps" in message
    assert "slurm_signal_delay_s" not in message


def test_requeues_need_a_warning_that_outlasts_a_step():
    """A limit that falls mid-step ends the job in TIMEOUT, not requeued: a stage that needs
    several jobs fails unless SLURM's signal comes a step and its save before the limit."""
    b = StageBudget("mixed", "mixed", 8, 1, 400, 4 * 3600, 2880, 60, 20, 245, 300)
    assert b.jobs_needed > 1 and not b.fits
    with pytest.raises(ConfigError, match=r"slurm_signal_delay_s>=18375 \(now 300\)"):
        check_budgets([b])
    assert replace(b, signal_s=18375).fits
    one_job = replace(b, steps=5)  # a stage that ends in its first job needs no requeue
    assert one_job.jobs_needed == 1 and one_job.fits


def test_the_m2rl_study_fits_its_budget_and_three_requeues_would_not(m2rl):
    trained = {s.name for s in m2rl.stages if s.kind in ("sft", "expert", "mixed", "distill")}
    assert {b.stage for b in m2rl.budgets} == trained
    check_budgets(m2rl.budgets)  # fits, with the margin
    tight = [replace(b, requeues=3) for b in m2rl.budgets]
    with pytest.raises(ConfigError, match=r"mixed-seed0 needs .* set study.slurm.slurm_max"):
        check_budgets(tight)


def test_the_dry_run_prints_gpu_hours_beside_the_papers(m2rl):
    text = budget_text(m2rl.run, m2rl.budgets, m2rl.slurm_by_kind)
    assert re.search(r"math +[\d,]+ \| 2,173", text)
    assert re.search(r"mixed +[\d,]+ \| 2,166", text)
    assert re.search(
        r"mixed / separate experts \(math, code, science, instruction\): "
        r"[\d.]+% \| 33.2%",
        text,
    )
    assert "expert-math-seed0" in text and "fits" in text


def test_eval_merge_and_report_jobs_do_not_take_a_node(m2rl):
    base = m2rl.run.study.slurm
    assert base["slurm_mem"] == 0 and base["gpus_per_node"] == 8  # training: the node
    kinds = m2rl.slurm_by_kind
    assert kinds["eval"]["gpus_per_node"] == 1
    assert kinds["merge"]["gpus_per_node"] == kinds["report"]["gpus_per_node"] == 0
    for kind in ("eval", "merge", "report"):
        mem = kinds[kind]["slurm_mem"]
        assert mem not in (0, "0") and 4 <= int(mem.rstrip("G")) <= 200, (kind, mem)
        assert kinds[kind]["cpus_per_task"] < base["cpus_per_task"]
    # a merge holds its five experts, the base and the result: ~8 GB each in bf16
    assert int(kinds["merge"]["slurm_mem"].rstrip("G")) >= 7 * 8
    assert "analyze" not in kinds and "filter" not in kinds  # they load models: study.slurm


def test_a_study_that_sets_no_node_wide_values_gets_none_added(tmp_path):
    p = plan(["experiment=tiny_study", "study.launcher=slurm", f"study.out_dir={tmp_path}"])
    assert not any("slurm_mem" in v for v in p.slurm_by_kind.values())


def test_ddp_timeout_follows_the_step_time(monkeypatch):
    assert ddp_timeout(None) == ddp_timeout(60) == 1800  # the default is the floor
    assert ddp_timeout(3 * 3600) == 6 * 3600
    from rlvr.training.trainer_args import ddp_timeout as for_run

    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    run = expert()
    assert for_run(run, "rl") == ddp_timeout(step(run)) > 1800
    fixed = replace(run, trainer=replace(run.trainer, ddp_timeout_s=900))
    assert for_run(fixed, "rl") == 900
    tiny = stage_config(user_overrides(["experiment=tiny_study"]), _tiny_stage())
    assert for_run(tiny, "rl") == 1800  # no step time on CPU: the default


def _tiny_stage():
    from pathlib import Path

    from rlvr.study.plan import Stage

    return Stage("expert-math-seed0", "expert", "rlvr.train", (), (), Path("x"), ())


def test_the_dry_run_stops_before_submitting_when_a_stage_is_over_budget(tmp_path, monkeypatch):
    from rlvr.study.__main__ import run_study
    from tests.support.m2rl_data import m2rl_local_data

    data = m2rl_local_data(tmp_path / "data", monkeypatch)  # no domain may be empty
    argv = [
        *M2RL,
        f"study.out_dir={tmp_path}",
        "study.dry_run=true",
        "study.slurm.slurm_max_num_timeout=3",
        *data,
    ]
    with pytest.raises(ConfigError, match=r"stage expert-math-seed0 needs ~\d+ h on 1 node"):
        run_study(argv)
    assert not (tmp_path / "m2rl_study" / "study.json").exists()
