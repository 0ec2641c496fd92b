"""scripts/sweep_accelerate.py: sweep expansion, the accelerate commands, and a real launch."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "sweep_accelerate.py"


sweep = load_script("sweep_accelerate")

# (overrides, expected points in order)
EXPANSIONS = [
    (["domains=[math],[code]"], [["domains=[math]"], ["domains=[code]"]]),
    (
        ["domains=[math],[code]", "algo=grpo,dapo", "experiment=tiny_rl"],
        [
            ["domains=[math]", "algo=grpo", "experiment=tiny_rl"],
            ["domains=[math]", "algo=dapo", "experiment=tiny_rl"],
            ["domains=[code]", "algo=grpo", "experiment=tiny_rl"],
            ["domains=[code]", "algo=dapo", "experiment=tiny_rl"],
        ],
    ),
    (["trainer.seed=range(0,3)"], [[f"trainer.seed={i}"] for i in range(3)]),
    (["domains=[math,code]", "sft=none"], [["domains=[math,code]", "sft=none"]]),
    (["+extra=1", "~peft"], [["+extra=1", "~peft"]]),
    ([], [[]]),
]


@pytest.mark.parametrize(("overrides", "points"), EXPANSIONS)
def test_sweep_expands_to_the_cartesian_product_in_order(overrides, points):
    assert sweep.expand(overrides) == points


def test_five_single_domain_arms():
    arms = "[math],[code],[science],[instruction],[agent]"
    points = sweep.expand([f"domains={arms}", "experiment=tiny_rl"])
    assert [p[0] for p in points] == [f"domains=[{d}]" for d in arms[1:-1].split("],[")]
    assert all(p[1] == "experiment=tiny_rl" for p in points)


@pytest.mark.parametrize("bad", [["-m", "a=1,2"], ["a=[1,2"], ["a=b=c=("]])
def test_unusable_overrides_raise(bad):
    with pytest.raises(sweep.SweepError):
        sweep.expand(bad)


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=180,
    )


def test_dry_run_prints_one_accelerate_launch_per_point():
    proc = run_script(
        "--config",
        "cpu_fsdp2",
        "--dry-run",
        "--launch-args=--num_processes 2",
        "domains=[math],[code]",
        "model.name='/models/my model'",
        "trainer.max_steps=3",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for line, domain in zip(lines, ("math", "code"), strict=True):
        argv = shlex.split(line)
        assert argv[:4] == [
            "accelerate",
            "launch",
            "--config_file",
            "conf/accelerate/cpu_fsdp2.yaml",
        ]
        assert argv[4:6] == ["--num_processes", "2"]
        assert argv[6:8] == ["-m", "rlvr.train"]
        assert argv[8:] == [
            f"domains=[{domain}]",
            "model.name='/models/my model'",
            "trainer.max_steps=3",
        ]


def test_unknown_accelerate_config_names_the_known_ones():
    proc = run_script("--config", "no_such", "--dry-run", "domains=[math]")
    assert proc.returncode == 2
    known = sorted(p.stem for p in (REPO / "conf" / "accelerate").glob("*.yaml"))
    assert known and all(name in proc.stderr for name in known)


def test_real_launches_run_in_sequence_and_stop_at_a_failure():
    ok = run_script("--config", "cpu_fsdp2", "--entry", "this", "point=1")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "Beautiful is better than ugly" in ok.stdout  # the entry ran under accelerate
    assert "1 of 1 points finished" in ok.stderr

    bad = run_script("--config", "cpu_fsdp2", "--entry", "no_such_module_xyz", "point=1,2")
    assert bad.returncode == 1
    assert "point 1/2 failed" in bad.stderr
    assert "point 2/2" not in bad.stderr  # without --keep-going the sweep stops


def test_slurm_launcher_config_composes_with_the_plugin_schema():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rlvr.config import register_configs
    from rlvr.runs.cli import CONF_DIR, register_resolvers

    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(
            "train",
            overrides=["hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu"],
            return_hydra_config=True,
        )
    launcher = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    assert launcher["partition"] == "gpu"
    assert launcher["_target_"].endswith("SlurmLauncher")
    import hydra_plugins.hydra_submitit_launcher.config as plugin  # the slurm extra

    fields = set(plugin.SlurmQueueConf.__dataclass_fields__)
    assert set(launcher) <= fields, set(launcher) - fields  # no misspelt keys
    assert launcher["_target_"] == plugin.SlurmQueueConf._target_


@pytest.mark.slow
def test_hydra_multirun_runs_single_domain_arms_in_sequence(tmp_path):
    """python -m rlvr.train -m domains=[math],[science]: one run folder per arm."""
    import json
    import os

    tiny = [
        "sft=none",
        "logger=none",
        "model.tiny.hidden_size=32",
        "model.tiny.num_hidden_layers=1",
        "model.tiny.num_attention_heads=2",
        "model.tiny.num_key_value_heads=1",
        "model.tiny.intermediate_size=64",
        "mixture.train_size=8",
        "mixture.heldout_size=2",
        "eval.k=1",
        "algo.num_generations=2",
        "algo.prompts_per_step=2",
        "algo.max_completion_length=4",
        "trainer.max_steps=1",
        "trainer.verifier_workers=1",
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_CACHE": str(tmp_path / "cache"),
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "rlvr.train", "-m", "domains=[math],[science]", *tiny] + [f"paths.output_root={out}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    summaries = [json.loads(p.read_text()) for p in out.glob("default/*/summary.json")]
    assert sorted(s["domains"] for s in summaries) == [["math"], ["science"]]
    assert all(s["rl"]["steps"] == 1 for s in summaries)
    assert len({s["run_dir"] for s in summaries}) == 2


def test_the_multinode_config_dry_runs_the_m2rl_arms():
    done = run_script(
        "--config",
        "multinode_fsdp2",
        "--dry-run",
        "experiment=m2rl_rl",
        "domains=[m2rl/math],[m2rl/code]",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("accelerate launch")]
    assert len(lines) == 2
    assert all("--config_file conf/accelerate/multinode_fsdp2.yaml -m rlvr.train" in x for x in lines)
    assert ["'domains=[m2rl/math]'" in lines[0], "'domains=[m2rl/code]'" in lines[1]] == [
        True,
        True,
    ]
