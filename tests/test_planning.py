"""The resource plan: shapes count what transformers builds, micro-batches keep the global
batch, the M2RL preset fits its GPUs and the old settings fail naming the fix, and the plan
reaches every dry run without changing what a stage trains."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from rlvr.config import ConfigError, ModelConfig, RunConfig
from rlvr.planning import micro_steps, model_shape, plan_stage
from rlvr.study.commands import accelerate_layout, compose, config_hash
from rlvr.study.plan import Stage

REPO = Path(__file__).resolve().parents[1]


def composed(*overrides: str) -> RunConfig:
    return OmegaConf.to_object(compose([*overrides, "run_name=plan"]))  # type: ignore[return-value]


def preset_shape(name: str) -> dict:
    return yaml.safe_load((REPO / f"conf/model/{name}.yaml").read_text())["shape"]


@pytest.mark.parametrize(
    ("preset", "architecture"),
    [
        ("qwen3-4b-base", "Qwen3ForCausalLM"),
        ("qwen2.5-0.5b-instruct", "Qwen2ForCausalLM"),
        ("smollm2-135m-instruct", "LlamaForCausalLM"),
    ],
)
def test_parameter_count_equals_the_model_transformers_builds(preset, architecture):
    import transformers

    shape = preset_shape(preset)
    config_class = getattr(transformers, architecture.replace("ForCausalLM", "Config"))
    with torch.device("meta"):  # shapes only: a 4B model costs nothing
        model = getattr(transformers, architecture)(config_class(**shape))
    built = sum(p.numel() for p in model.parameters())
    assert model_shape(ModelConfig(name=preset, shape=shape)).parameters() == built


def test_the_embedded_model_shape_counts_its_parameters(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    built = AutoModelForCausalLM.from_pretrained(tiny_model_dir).num_parameters()
    assert model_shape(ModelConfig(name="tiny")).parameters() == built
    assert model_shape(ModelConfig(name=str(tiny_model_dir))).parameters() == built


def test_an_unknown_hub_model_has_no_shape_and_auto_says_what_to_set():
    run = composed(
        "model.name=someone/not-cached-anywhere", "trainer.micro_batch=auto", "trainer.device_memory_gib=80"
    )
    assert model_shape(run.model) is None
    with pytest.raises(ConfigError, match="model.shape"):
        micro_steps(run, "rl", 1)


@pytest.mark.parametrize("kind", ["rl", "distill", "sft"])
@pytest.mark.parametrize("choice", [None, "auto", 2])
def test_micro_batches_keep_the_global_batch(kind, choice):
    run = composed(
        "experiment=m2rl_study", f"trainer.micro_batch={choice or 'null'}", "trainer.gradient_checkpointing=true"
    )
    processes = 8
    micro, accumulation = micro_steps(run, kind, processes)
    rows = {
        "rl": run.algo.prompts_per_step * run.algo.num_generations,
        "distill": run.distill.prompts_per_step * run.distill.samples_per_prompt,
        "sft": run.sft.batch_size * processes,
    }[kind]
    assert micro * accumulation * processes == rows
    if choice == 2:
        assert micro == 2


def test_auto_picks_the_largest_micro_batch_that_fits():
    run = composed("experiment=m2rl_study")
    plan = plan_stage(run, "mixed", "mixed", 8)
    assert plan.fits and plan.workload.micro_batch < 256
    bigger = composed("experiment=m2rl_study", f"trainer.micro_batch={plan.workload.micro_batch * 2}")
    assert not plan_stage(bigger, "mixed", "mixed", 8).fits


def test_a_micro_batch_that_does_not_divide_names_the_ones_that_do():
    run = composed("experiment=m2rl_study", "trainer.micro_batch=3")
    with pytest.raises(ConfigError, match=r"trainer.micro_batch=3 must divide the 256 rows"):
        micro_steps(run, "rl", 8)


@pytest.mark.parametrize("bad", ["-1", "0", "abc", "2.5"])
def test_a_bad_micro_batch_fails_at_config_time(bad):
    from hydra.errors import HydraException

    from rlvr.config import validate

    with pytest.raises((ConfigError, HydraException), match="micro_batch"):
        validate(composed("experiment=tiny_rl", f"trainer.micro_batch={bad}"))


def test_grpo_config_takes_the_cut_and_keeps_one_generation_batch_per_update(tmp_path):
    from rlvr.training.trainer_args import build_grpo_config

    run = composed("experiment=tiny_rl", "trainer.micro_batch=8")
    args = build_grpo_config(run, tmp_path)
    rows = run.algo.prompts_per_step * run.algo.num_generations
    assert args.per_device_train_batch_size == 8
    assert args.gradient_accumulation_steps == rows // 8
    assert args.generation_batch_size == rows  # one generation batch, one optimizer update


def test_the_m2rl_study_plan_fits_and_the_old_settings_fail_naming_the_fix(tmp_path, capsys, monkeypatch):
    from rlvr.study.__main__ import run_study
    from tests.support.m2rl_data import m2rl_local_data

    data = m2rl_local_data(tmp_path / "data", monkeypatch)  # no domain may be empty
    argv = ["experiment=m2rl_study", "study.dry_run=true", f"study.out_dir={tmp_path}", *data]
    assert run_study(argv) == 0
    printed = capsys.readouterr().out
    assert "resource plan" in printed and "DOES NOT FIT" not in printed
    assert printed.count("fits") >= 4  # sft, experts, mixed, evaluations
    from rlvr.reporting.paper import BENCHMARKS

    assert f"eval.tasks=[{','.join(BENCHMARKS)}]" in printed  # the paper's nine, in its order
    with pytest.raises(ConfigError) as failed:
        run_study([*argv, "trainer.micro_batch=null"])
    assert "DOES NOT FIT" in capsys.readouterr().out
    assert "set trainer.micro_batch=auto" in str(failed.value)
    assert "mixed-seed0" in str(failed.value)


def test_an_entry_point_dry_run_prints_the_plan_and_loads_nothing(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.train",
            "experiment=tiny_rl",
            "dry_run=true",
            f"paths.output_root={tmp_path}",
            "init_from=/not/made/yet",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "resource plan" in out.stdout and "tokens/step" in out.stdout
    assert not list(tmp_path.rglob("*.safetensors"))


def test_plan_only_settings_leave_stage_hashes_alone():
    stage = Stage("expert-math-seed0", "expert", "rlvr.train", (), (), Path("x"), ())
    plain = composed("experiment=tiny_rl")
    planned = composed(
        "experiment=tiny_rl",
        "trainer.device_memory_gib=24",
        "trainer.device_tflops=100",
        "trainer.plan_prompt_tokens=64",
    )
    cut = composed("experiment=tiny_rl", "trainer.micro_batch=8")
    assert config_hash(plain, stage, {}) == config_hash(planned, stage, {})
    assert config_hash(plain, stage, {}) != config_hash(cut, stage, {})  # it changes training


def test_multinode_processes_are_counted_once():
    data = yaml.safe_load((REPO / "conf/accelerate/multinode_fsdp2.yaml").read_text())
    layout = accelerate_layout("multinode_fsdp2")
    assert (layout.processes, layout.sharded) == (data["num_processes"], True)
    assert layout.machines == data["num_machines"] > 1
    assert accelerate_layout(None).processes == 1


def test_each_node_gets_its_rank_and_the_main_node_address():
    from rlvr.study.commands import node_argv

    argv = ["py", "-m", "accelerate.commands.launch", "--config_file", "c.yaml", "-m", "rlvr.train"]
    assert node_argv(argv, 2, "gpu01", 29500) == [
        "py",
        "-m",
        "accelerate.commands.launch",
        "--machine_rank",
        "2",
        "--main_process_ip",
        "gpu01",
        "--main_process_port",
        "29500",
        "--config_file",
        "c.yaml",
        "-m",
        "rlvr.train",
    ]


@pytest.mark.parametrize("node", [0, 1])
def test_a_stage_on_several_nodes_runs_once_per_node_and_marks_once(tmp_path, monkeypatch, node):
    """Inside a SLURM job of 4 nodes (SLURM's variables as sbatch sets them): node 0 runs its
    command with machine_rank 0 and keeps the stage's log and done marker; node 1 runs with
    machine_rank 1, logs beside it and marks nothing."""
    from rlvr.study.launchers import StageJob
    from rlvr.study.manifest import MARKERS, log_path

    slurm = {
        "SUBMITIT_EXECUTOR": "slurm",
        "SLURM_JOB_ID": "77",
        "SLURM_NODEID": str(node),
        "SLURM_JOB_NODELIST": "gpu[01-04]",
        "SLURM_PROCID": str(node),
        "SLURM_NTASKS": "4",
        "SLURM_LOCALID": "0",
        "SLURM_JOB_NUM_NODES": "4",
    }
    for key, value in slurm.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "stage"
    stage = Stage("mixed-seed0", "mixed", "rlvr.train", (), (), out, ())
    echo = "import sys; print(' '.join(sys.argv[1:]))"
    argv = [sys.executable, "-c", echo, "accelerate.commands.launch", "-m", "rlvr.train"]
    job = StageJob(tmp_path, stage, "h", argv, machines=4, port=29511)
    assert job() == 0
    main_log = log_path(tmp_path, stage.name)
    log = main_log if node == 0 else main_log.with_suffix(f".node{node}.log")
    assert f"--machine_rank {node} --main_process_ip gpu01 --main_process_port 29511" in (log.read_text())
    marked = list((tmp_path / MARKERS).glob("*"))
    assert bool(main_log.exists()) == (node == 0)
    assert (len(marked) > 0) == (node == 0)


def test_a_multinode_config_is_refused_without_slurm(tmp_path):
    from rlvr.study.__main__ import run_study

    with pytest.raises(ConfigError, match="study.launcher=slurm"):
        run_study(
            [
                "experiment=m2rl_study",
                "study.dry_run=true",
                f"study.out_dir={tmp_path}",
                "study.accelerate=multinode_fsdp2",
                "study.launcher=local",
            ]
        )


def test_fsdp2_mixed_precision_holds_float32_masters_and_single_process_the_loaded_width():
    run = composed("experiment=m2rl_study")
    params = model_shape(run.model).parameters()
    fsdp = plan_stage(run, "mixed", "mixed", 8).parts
    assert fsdp["weights"] + fsdp["gradients"] + fsdp["optimizer"] == 16 * params / 8
    assert fsdp["root unit"] > 0  # the tied embedding, gathered through the step
    plain = plan_stage(run, "mixed", "mixed", 8, sharded=False).parts  # DDP, bf16 as loaded
    assert plain["weights"] + plain["gradients"] + plain["optimizer"] == 8 * params
    assert plain["ddp buckets"] == 2 * params and "root unit" not in plain


def test_sdpa_counts_its_padded_rows_mask_and_flash_attention_does_not():
    run = composed("experiment=m2rl_study", "trainer.micro_batch=2")
    w = plan_stage(run, "mixed", "mixed", 8).workload
    square = 2 * w.sequence**2
    assert plan_stage(run, "mixed", "mixed", 8).parts["attention mask"] == square * (1 + 2)
    flash = composed(
        "experiment=m2rl_study",
        "trainer.micro_batch=2",
        "model.attn_implementation=flash_attention_2",
    )
    assert "attention mask" not in plan_stage(flash, "mixed", "mixed", 8).parts


def test_auto_fits_inside_the_usable_fraction_less_the_margin():
    from rlvr.planning.memory import GIB

    run = composed("experiment=m2rl_study")
    for kind in ("sft", "mixed", "distill"):
        plan = plan_stage(run, kind, kind, 8)
        assert plan.parts["margin"] == run.trainer.memory_margin_gib * GIB
        usable = run.trainer.device_memory_gib * run.trainer.device_usable_fraction * GIB
        assert plan.total <= usable
    tight = composed("experiment=m2rl_study", "trainer.memory_margin_gib=60")
    assert not plan_stage(tight, "mixed", "mixed", 8).fits  # even one row leaves no margin


def test_on_cpu_auto_cuts_a_real_model_step_into_the_ram_given():
    """On CPU the device is the host: a SmolLM2 step of 64 rows that needs 20 GiB at once is cut
    into micro-batches that fit 6 GiB, counting the CPU runtime (1 GiB), not CUDA's (2 GiB)."""
    from rlvr.planning.memory import GIB

    step = ["model=smollm2-135m-instruct", "algo.prompts_per_step=8", "algo.num_generations=8"]
    step += ["algo.max_completion_length=64", "trainer.plan_prompt_tokens=100"]
    whole = plan_stage(composed(*step, "trainer.device_memory_gib=100"), "run", "rl", 1)
    assert whole.workload.micro_batch == 64 and whole.total > 6 * GIB
    run = composed(*step, "trainer.micro_batch=auto", "trainer.device_memory_gib=6")
    plan = plan_stage(run, "run", "rl", 1)
    assert plan.parts["runtime"] == 1 * GIB and plan.fits and plan.total <= 6 * 0.98 * GIB
    micro, accumulation = micro_steps(run, "rl", 1)
    assert micro * accumulation == 64 and 1 <= micro < 64
    gpu = plan_stage(composed(*step, "trainer=gpu"), "run", "rl", 1)
    assert gpu.parts["runtime"] == 2 * GIB
