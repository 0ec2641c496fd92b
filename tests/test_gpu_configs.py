"""Every shipped GPU accelerate config, run for real on 2 CPU processes (gloo): 2 GRPO steps
from the SFT fixture with the options ``trainer=gpu`` sets (gradient checkpointing, bf16),
then ``final/`` is merged by ``rlvr.merge`` and evaluated by ``rlvr.evaluate``.

accelerate picks FSDP only for accelerator devices, so the ranks run under
``tests/support/fsdp_on_cpu.py``, which lets its state choose FSDP for gloo CPU processes;
from there on it is accelerate's and torch's FSDP2 (``fully_shard`` over a CPU mesh, sharded
checkpoints, activation checkpointing, state-dict gathering). vLLM, NCCL and the GPU memory
figures wait for a GPU (scripts/gpu_check.sh).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from test_multiprocess import OVERRIDES, launch_env, run_dir, step_metrics
from test_train import weights

from rlvr.training.checkpoints import is_complete, latest_complete_checkpoint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# cpu_fsdp2 is the CPU config proper (tests/test_multiprocess.py); the rest target GPUs
CONFIGS = sorted(p.name for p in (REPO / "conf/accelerate").glob("*.yaml") if "cpu" not in p.name)
HELDOUT_CAP = 5  # rows, of 6: odd, so the two ranks score different numbers of rows
TRAINER_GPU = yaml.safe_load((REPO / "conf/trainer/gpu.yaml").read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(config: str, root: Path, cache: Path, *extra: str, base=OVERRIDES, timeout: float = 900) -> str:
    """One ``accelerate launch`` of ``rlvr.train`` with ``config``, shrunk to 2 local ranks."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file"]
    cmd += [str(REPO / "conf/accelerate" / config), "--num_processes", "2"]
    cmd += ["--num_machines", "1", "--machine_rank", "0", "--main_process_ip", "127.0.0.1"]
    cmd += ["--main_process_port", str(free_port()), "--rdzv_backend", "static"]
    cmd += ["-m", "tests.support.fsdp_on_cpu", "rlvr.train", *base]
    cmd += [f"paths.output_root={root}", *extra]
    env = launch_env(cache)
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    return log


def gpu_trainer_options(config: str) -> list[str]:
    """What ``trainer=gpu`` turns on, less vLLM (not on CPU); bf16 as the config asks."""
    accel = yaml.safe_load((REPO / "conf/accelerate" / config).read_text())
    bf16 = accel.get("mixed_precision") == "bf16"
    return [
        f"trainer.gradient_checkpointing={str(TRAINER_GPU['gradient_checkpointing']).lower()}",
        f"trainer.bf16={str(bf16).lower()}",
    ]


def fsdp_section(config: str) -> dict:
    return yaml.safe_load((REPO / "conf/accelerate" / config).read_text()).get("fsdp_config") or {}


@pytest.mark.parametrize("config", CONFIGS)
def test_config_trains_and_its_final_model_merges_and_evaluates(config, tmp_path, rlvr_cache, sft_checkpoint):
    root = tmp_path / "run"
    extra = [f"init_from={sft_checkpoint}", "trainer.max_steps=2", "trainer.save_steps=1"]
    base = OVERRIDES
    if config == "gpu_ddp.yaml":  # the in-run evaluation, spread over ranks and token-capped
        base = [o for o in OVERRIDES if not o.startswith("mixture.heldout_size=")]
        base += ["mixture.heldout_size=6", "eval.k=2", "eval.max_new_tokens=16"]
        base += ["eval.greedy=true", f"eval.in_run_token_budget={HELDOUT_CAP * 3 * 16}"]
    if config == "gpu_fsdp2.yaml":  # FSDP ranks sample in step: agent episodes too
        base = [*OVERRIDES, "domains=[math,agent]", "algo.max_completion_length=96"]
    if config == "multinode_fsdp2.yaml":  # ... and single turns graded as rows end
        base = [*OVERRIDES, "trainer.score_ahead=true"]
    log = launch(
        config,
        root,
        rlvr_cache,
        *extra,
        "algo.learning_rate=1e-3",
        *gpu_trainer_options(config),
        base=base,
    )
    folder = run_dir(root)
    summary = json.loads((folder / "summary.json").read_text())
    fsdp = fsdp_section(config)
    expected = "FSDP" if fsdp else "MULTI_CPU"
    assert summary["rl"]["distributed_type"] == expected, summary["rl"]
    assert summary["rl"]["steps"] == 2 and summary["compute"]["processes"] == 2
    # rlvr's KV-cache sampler on both: DDP ranks on their own, FSDP ranks in step
    assert summary["rl"]["generation"]["sampler"] == "kv-cache", summary["rl"]["generation"]
    logged = step_metrics(folder)
    if config == "gpu_fsdp2.yaml":
        assert sum(m["agent/count"] for m in logged) > 0
    if config == "multinode_fsdp2.yaml":
        assert sum(m["time/reward_ahead_s"] for m in logged) > 0  # rows graded while others decode
    if config == "gpu_ddp.yaml":
        assert f"capped to {HELDOUT_CAP} of 6 rows" in log
        for stage in ("start", "rl"):  # both ranks' rows, gathered
            assert summary["heldout"][stage]["math"]["prompts"] == HELDOUT_CAP, summary["heldout"]
    if fsdp.get("fsdp_activation_checkpointing"):
        assert "trainer.gradient_checkpointing yields" in log  # transformers refuses both
    if fsdp.get("fsdp_state_dict_type") == "SHARDED_STATE_DICT":
        ckpt = folder / "checkpoints" / "checkpoint-2"
        assert (ckpt / "pytorch_model_fsdp_0" / ".metadata").exists(), sorted(ckpt.iterdir())
        assert not list(ckpt.glob("*.safetensors"))  # sharded: torch.distributed.checkpoint
    assert latest_complete_checkpoint(folder / "checkpoints") == folder / "checkpoints/checkpoint-2"

    # final/ holds the full model: every SFT tensor, same shapes, finite, moved by training
    start_w, final_w = weights(sft_checkpoint), weights(folder / "final")
    assert start_w.keys() == final_w.keys()
    assert all(final_w[k].shape == start_w[k].shape for k in start_w)
    assert all(torch.isfinite(t).all() for t in final_w.values())
    assert max((final_w[k] - start_w[k]).abs().max().item() for k in start_w) > 1e-4

    from rlvr.merge import merge_models

    merged = merge_models("linear", None, [folder, sft_checkpoint], {"weight": 1.0}, tmp_path / "m")
    merged_w = weights(merged)
    key = next(k for k in start_w if not torch.equal(final_w[k], start_w[k]))
    expected_mean = (final_w[key].float() + start_w[key].float()) / 2
    torch.testing.assert_close(merged_w[key].float(), expected_mean, rtol=1e-3, atol=1e-4)

    from rlvr.config import EvalConfig, LoggerConfig, RunConfig
    from rlvr.evaluation.evaluator import evaluate

    run = RunConfig(
        eval=EvalConfig(
            models=[f"rl={folder / 'final'}"],
            tasks=["micro_math"],
            out_dir=str(tmp_path / "eval"),
            k=2,
            max_new_tokens=16,
            max_prompts=4,
            workers=1,
        ),
        logger=LoggerConfig(name="none", mode="disabled"),
    )
    study = evaluate(run)
    result = json.loads((study / "eval" / "rl" / "micro_math.json").read_text())
    assert sum(result["status_counts"].values()) == 4 * 2


def test_sharded_checkpoint_resumes(tmp_path, rlvr_cache, sft_checkpoint):
    """gpu_fsdp2 saves SHARDED_STATE_DICT checkpoints: with the last one gone (as after a
    preemption), a rerun with resume=true continues from checkpoint-1, which
    rlvr.training.checkpoints recognises as complete, instead of starting at step 0."""
    root = tmp_path / "run"
    args = [f"init_from={sft_checkpoint}", "trainer.max_steps=2", "trainer.save_steps=1"]
    args += ["trainer.bf16=false", "resume=true"]
    launch("gpu_fsdp2.yaml", root, rlvr_cache, *args)
    folder = run_dir(root)
    assert is_complete(folder / "checkpoints" / "checkpoint-1")
    first = weights(folder / "final")
    shutil.rmtree(folder / "checkpoints" / "checkpoint-2")
    shutil.rmtree(folder / "final")
    log = launch("gpu_fsdp2.yaml", root, rlvr_cache, *args)
    assert "resuming from" in log and "checkpoint-1" in log, log[-3000:]
    state = json.loads((folder / "checkpoints" / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    again = weights(folder / "final")
    assert again.keys() == first.keys()
    assert all(torch.isfinite(t).all() for t in again.values())
