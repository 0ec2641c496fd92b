"""vLLM's share of a training device: sleep mode, the plan's auto utilization, KV capacity, and
the server checks a study makes before it queues."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig
from rlvr.planning import plan_stage, vllm
from rlvr.planning.memory import GIB
from rlvr.study.commands import compose
from rlvr.study.plan import Stage
from rlvr.study.preflight import _policy_server, _teacher_servers
from rlvr.training.trainer_args import vllm_utilization

OLD = ["trainer.vllm_gpu_memory_utilization=0.3", "trainer.vllm_enable_sleep_mode=false"]


def composed(*overrides: str) -> RunConfig:
    return OmegaConf.to_object(compose([*overrides, "run_name=plan"]))  # type: ignore[return-value]


def engine(run: RunConfig, kind: str = "expert"):
    p = plan_stage(run, kind, kind, 8, True)
    w = p.workload
    return p, vllm.engine_plan(run, p.shape, p.parts, p.device_bytes, w.generation_rows, w.sequence)


def test_auto_with_sleep_leaves_the_training_state_and_holds_more_kv_than_0_3_without():
    run = composed("experiment=m2rl_study")
    assert run.trainer.vllm_enable_sleep_mode and run.trainer.vllm_gpu_memory_utilization == "auto"
    p, auto = engine(run)
    _, old = engine(composed("experiment=m2rl_study", *OLD))
    assert 0.3 < auto.utilization <= vllm.MAX_UTILIZATION
    assert auto.generation_peak <= p.device_bytes  # engine + what training keeps: fits
    assert auto.kv_tokens > 3 * old.kv_tokens
    assert old.in_flight < 4 < auto.in_flight  # 33,792-token completions at once per GPU
    # asleep, the engine holds only what it keeps outside its budget during the training pass
    assert p.parts["vllm"] == pytest.approx(vllm.OUTSIDE_BYTES)
    assert "KV-bound" in auto.describe() and f"{auto.kv_tokens:,} tokens" in auto.describe()


def test_distillation_plans_its_engine_too():
    _, plan = engine(composed("experiment=m2rl_study"), "distill")
    assert plan.sequence == 1024 + 16384 and plan.in_flight > 1


def test_without_sleep_the_engine_share_is_counted_in_the_training_peak():
    run = composed("experiment=m2rl_study", *OLD)
    p = plan_stage(run, "expert", "expert", 8, True)
    assert p.parts["vllm"] == pytest.approx(0.3 * 80 * GIB + vllm.OUTSIDE_BYTES)


def test_auto_without_sleep_mode_says_what_to_set():
    run = composed("experiment=m2rl_study", "trainer.vllm_enable_sleep_mode=false")
    with pytest.raises(ConfigError, match="vllm_enable_sleep_mode=true"):
        plan_stage(run, "expert", "expert", 8, True)


def test_a_share_that_leaves_no_room_for_the_training_state_fails_naming_auto():
    run = composed("experiment=m2rl_study", "trainer.vllm_gpu_memory_utilization=0.95")
    with pytest.raises(ConfigError, match="vllm_gpu_memory_utilization=auto"):
        engine(run)


def test_trl_gets_the_planned_share_on_this_launchs_processes(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    run = composed("experiment=m2rl_study")
    assert vllm_utilization(run, "rl") == engine(run)[1].utilization
    assert vllm_utilization(composed("experiment=m2rl_study", *OLD), "rl") == 0.3


def test_one_node_server_must_split_the_batch_over_the_gpus_it_leaves():
    why = vllm.server_split(2048, 8, 1)
    assert why and "7 GPUs" in why and "[4, 6, 7]" in why
    assert vllm.server_split(2048, 8, 4) is None


def test_a_server_the_study_does_not_start_is_refused_with_its_command():
    run = composed("experiment=m2rl_study", "trainer.vllm_mode=server", "init_from=/sft/final")
    stage = Stage("expert-math-seed0", "expert", "rlvr.train", (), (), Path("/x"), ())
    problems = _policy_server(run, stage, 8, 1)
    assert any("do not split over the 7 GPUs" in p for p in problems)
    command = "CUDA_VISIBLE_DEVICES=7 trl vllm-serve --model /sft/final --port 8000"
    assert any(command in p and "vllm_server_base_url" in p for p in problems)
    run.trainer.vllm_server_base_url = "http://node:8000"
    run.trainer.vllm_server_devices = 4
    assert _policy_server(run, stage, 8, 1) == []


def test_mt_opd_teacher_servers_the_study_does_not_start_are_refused_with_their_commands():
    experts = [f"++distill.teachers.{d}=/study/experts/{d}-seed0/final" for d in ("math", "code")]
    run = composed(
        "experiment=m2rl_study",
        "domains=[m2rl/math,m2rl/code]",
        "distill.teacher_device=server",
        "++distill.teacher_servers.math=http://teachers:8101",
        *experts,
    )
    stage = Stage("mt_opd-seed0", "distill", "rlvr.distill", (), (), Path("/x"), ())
    [problem] = _teacher_servers(run, stage)
    assert "trl vllm-serve --model /study/experts/code-seed0/final --port 8101" in problem
    assert "distill.teacher_servers.code=http://<node>:8101" in problem
    assert "math-seed0" not in problem  # its server is named
    run.distill.teacher_servers["code"] = "http://teachers:8102"
    assert _teacher_servers(run, stage) == []
