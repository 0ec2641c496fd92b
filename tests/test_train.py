"""The GRPO entry point end to end on the tiny model: real TRL, real verifiers, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parents[1]
QUICK = [
    "logger=none",
    "sft=none",
    "trainer.max_steps=2",
    "trainer.save_steps=2",
    "mixture.train_size=64",
    "mixture.heldout_size=3",
    "eval.k=2",
    "eval.max_new_tokens=32",
    "algo.max_completion_length=32",
    "algo.learning_rate=1e-3",
]


def run_cli(args: list[str], out: Path, cache: Path, launcher: list[str] | None = None, timeout: int = 600):
    env = dict(os.environ, RLVR_CACHE=str(cache), HF_HUB_OFFLINE="1", WANDB_MODE="disabled")
    cmd = (launcher or [sys.executable]) + ["-m", "rlvr.train", *args, f"paths.output_root={out}"]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def only_run_dir(out: Path) -> Path:
    runs = [p for p in (out / "smoke").iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def weights(folder: Path) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for f in sorted(folder.glob("*.safetensors")):
        tensors.update(load_file(str(f)))
    return tensors


def test_smoke_grpo_changes_parameters_and_writes_metrics(tmp_path, rlvr_cache, sft_checkpoint):
    result = run_cli(["experiment=smoke", *QUICK, f"init_from={sft_checkpoint}"], tmp_path, rlvr_cache)
    assert result.returncode == 0, result.stderr[-3000:]
    run = only_run_dir(tmp_path)
    assert (run / "config.yaml").exists()
    sft, final = weights(sft_checkpoint), weights(run / "final")
    assert sft.keys() == final.keys()
    assert any(not torch.equal(sft[k], final[k]) for k in sft), "GRPO did not update any parameter"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "rewards/reward_math/mean" in m]
    assert [m["step"] for m in steps] == [1, 2]
    assert all(0.0 <= m["rewards/reward_math/mean"] <= 1.0 for m in steps)
    assert all("math/pass_rate" in m and "time/generation_s" in m for m in steps)
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["heldout"]) == {"start", "rl"}
    assert summary["heldout"]["start"]["math"]["prompts"] == 3
    assert summary["rl"]["steps"] == 2
    assert summary["compute"]["device_seconds"] > 0
    assert "held-out" in result.stdout + result.stderr  # the one-screen summary was printed


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("domains=[math,chemistry]", "valid domains: agent, code, instruction"),
        ("model.name=/does/not/exist", "neither an existing folder nor a Hub id"),
        ("mixture.mode=random", "mixture.mode='random' is not valid"),
        ("algo=ppo_xl", "valid algo: dapo, dr_grpo, grpo, gspo, m2rl"),
    ],
)
def test_bad_input_fails_fast_with_the_valid_choices(tmp_path, rlvr_cache, override, expected):
    result = run_cli(["experiment=smoke", override, "logger=none"], tmp_path, rlvr_cache, timeout=120)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert expected in output, output[-2000:]
    assert not (tmp_path / "smoke").exists() or not any((tmp_path / "smoke").rglob("final"))
