"""Every experiment config composes and converts; bad settings fail fast, naming the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from omegaconf import open_dict

from rlvr.config import ConfigError, RunConfig, register_configs, to_config
from rlvr.runs.cli import CONF_DIR, check_group_choices, register_resolvers
from tasks.schema import DOMAINS

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
ALGOS = sorted(p.stem for p in (REPO / "conf" / "algo").glob("*.yaml"))


@pytest.fixture(scope="module", autouse=True)
def hydra_context():
    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        yield


def compose_run(*overrides: str, outputs: Path | None = None) -> RunConfig:
    """Compose as the CLI does (including the run-name interpolation) and convert.

    With ``outputs``, runs live there and an ``init_from`` inside it (an earlier stage's
    output, e.g. the shared SFT model) is created empty so validation can pass."""
    extra = [f"paths.output_root={outputs}"] if outputs else []
    cfg = compose("train", overrides=[*overrides, *extra], return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    init = cfg.get("init_from")
    if outputs and init and Path(init).resolve().is_relative_to(outputs.resolve()):
        Path(init).mkdir(parents=True, exist_ok=True)
    return to_config(cfg)


def test_there_are_experiments_to_check():
    assert "smoke" in EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes_and_converts(name, tmp_path):
    run = compose_run(f"experiment={name}", outputs=tmp_path)
    assert isinstance(run, RunConfig)
    assert run.experiment == name, "an experiment file must set `experiment:` to its own name"
    assert run.domains and set(run.domains) <= set(DOMAINS)
    first = (REPO / "conf" / "experiment" / f"{name}.yaml").read_text().splitlines()
    commands = [line for line in first[:4] if line.startswith("# ") and " -m rlvr." in line]
    assert commands, f"conf/experiment/{name}.yaml must start with the command that runs it"


@pytest.mark.parametrize("algo", ALGOS)
def test_every_algo_preset_composes(algo):
    run = compose_run(f"algo={algo}")
    assert run.algo.name == algo


def test_m2rl_preset_holds_the_paper_settings():
    a = compose_run("algo=m2rl").algo
    assert (a.num_generations, a.prompts_per_step) == (16, 128)
    assert (a.epsilon, a.epsilon_high, a.beta) == (0.2, 0.28, 0.0)
    assert (a.learning_rate, a.lr_scheduler_type) == (2e-6, "constant")
    assert (a.adam_beta2, a.weight_decay, a.temperature, a.num_iterations) == (0.98, 0.1, 1.0, 1)
    assert a.format_gate and a.scale_rewards == "group"


def test_all_five_domains_compose_together_and_name_the_run():
    run = compose_run("domains=[math,code,science,instruction,agent]", "trainer.max_steps=3")
    assert sorted(run.domains) == sorted(DOMAINS)
    assert run.run_name == "domains=math,code,science,instruction,agent,trainer.max_steps=3"
    # excluded keys never change the run folder, so resume and later stages find it
    assert compose_run("resume=true", "logger=none").run_name == "base"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["mixture.mode=bad"], "choose one of: natural, weighted"),
        (["algo.loss_type=ppo"], "choose one of: grpo, dr_grpo, dapo"),
        (["model.name=/nope/x"], "neither an existing folder nor a Hub id"),
        (["model.name=org/name/extra"], "neither an existing folder nor a Hub id"),
        (["model.name=-bad/x"], "neither an existing folder nor a Hub id"),
        (["model.name=nohubslash"], "use model=tiny, a conf/model/*.yaml preset"),
        (["init_from=/nope/ckpt"], "init_from='/nope/ckpt' does not exist"),
        (["algo.num_generations=1"], "algo.num_generations has an impossible value"),
        (["logger.name=tensorboard"], "choose one of: wandb, none"),
        (["sandbox.backend=docker"], "auto, nsjail, bwrap, unshare, rlimit"),
        (["+sft.domain_examples.chemistry=10"], "sft.domain_examples: unknown domains"),
        (["+sft.domain_examples.code=-1"], "sft.domain_examples.code: an SFT example count"),
    ],
)
def test_bad_values_raise_config_error_naming_the_choice(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("*", r"\*").replace("(", r"\(")):
        compose_run(*overrides)


def test_model_folder_without_config_json_is_rejected(tmp_path):
    with pytest.raises(ConfigError, match="without config.json"):
        compose_run(f"model.name={tmp_path}")


@pytest.mark.parametrize(
    ("override", "listed"),
    [
        ("algo=nope", ALGOS),
        ("mixture=bogus", ["natural", "weighted"]),
        ("experiment=missing_experiment", EXPERIMENTS),
    ],
)
def test_unknown_group_option_lists_the_available_ones(override, listed):
    with pytest.raises(HydraException) as err:
        compose_run(override)
    assert all(name in str(err.value) for name in listed)


@pytest.mark.parametrize(
    "argv",
    [
        ["domains=[foo]"],
        ["domains=[math,foo]"],
        ["-m", "domains=[math],[foo]"],
        ["algo=ppo"],
        ["peft=qlora"],
    ],
)
def test_cli_precheck_rejects_unknown_options_with_the_valid_list(argv):
    with pytest.raises(ConfigError, match="valid"):
        check_group_choices(argv)


def test_cli_precheck_accepts_valid_sweeps_and_plain_values():
    check_group_choices(["-m", "domains=[math],[code],[science],[instruction],[agent]", "experiment=smoke"])
    check_group_choices(["model.name=/anything", "trainer.max_steps=3", "~peft", "experiment=null"])
    check_group_choices(["hydra/launcher=submitit_slurm", "+extra=1"])
    check_group_choices(["domains=[m2rl/math,code]"])  # options in nested folders


def run_cli(*args: str, tmp_path: Path) -> tuple[int, str, float]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rlvr.train", *args, f"paths.output_root={tmp_path}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - start


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["domains=[foo]"], ["foo", *DOMAINS]),
        (["mixture.mode=bad"], ["natural", "weighted"]),
        (["model.name=/nope/x"], ["/nope/x", "model=tiny"]),
    ],
)
def test_real_cli_fails_fast_before_loading_a_model(args, expected, tmp_path):
    code, output, seconds = run_cli(*args, tmp_path=tmp_path)
    assert code != 0
    assert all(word in output for word in expected), output[-2000:]
    assert "Loading weights" not in output and "tiny model ready" not in output
    # the interpreter start dominates; generous for a loaded machine
    assert seconds < 60
    assert not list(tmp_path.rglob("*.safetensors"))


@pytest.mark.parametrize(("mode", "expected"), [("weighted", {"math": 3, "code": 1}), ("natural", None)])
def test_mixture_config_reaches_the_trainer_sampler(mode, expected):
    from datasets import Dataset

    from rlvr.training.stages import _sampler_factory

    run = compose_run(f"mixture={mode}", "domains=[math,code]", "domains.math.weight=3")
    rows = Dataset.from_list([{"domain": d} for d in ["math"] * 40 + ["code"] * 40])
    sampler = _sampler_factory(run, rows)(mini_repeat_count=2, batch_size=4, repeat_count=1)
    assert sampler.mode == mode
    indices = list(sampler)[: 4 * 2 * 10]  # ten batches of 4 prompts x 2 completions
    counts = {d: sum(rows[i]["domain"] == d for i in indices[::2]) for d in ("math", "code")}
    if expected:  # exact per-batch quotas: 3 math and 1 code prompt in every batch of 4
        assert counts == {d: 10 * n for d, n in expected.items()}
    else:
        assert sum(counts.values()) == 40


def test_long_run_names_stay_distinct_and_short():
    from rlvr.runs.cli import run_dirname

    common = ",".join(f"model.tiny.hidden_size_{i}=32" for i in range(8))
    a, b = run_dirname(f"{common},trainer.seed=0"), run_dirname(f"{common},trainer.seed=1")
    assert a != b and len(a) <= 180 and len(b) <= 180
    assert a == run_dirname(f"{common},trainer.seed=0")  # stable: resume finds the folder
    assert run_dirname("domains=[math],algo=grpo") == "algo=grpo,domains=math"
    assert run_dirname("") == "base"


def test_run_names_never_hold_paths():
    """Path-valued overrides (a finished run's folder, with '=' and ',' in its name) show as a
    short hash: the folder name stays short, typable, and distinct per input."""
    from rlvr.runs.cli import run_dirname

    sft = "/tmp/x/outputs/tiny_sft/sft.max_steps=40,eval.k=2/final"
    other = "/tmp/y/outputs/tiny_sft/base/final"
    overrides = ["domains=[math]", f"init_from='{sft}'", "trainer.seed=1", "resume=true"]
    name = run_dirname(overrides, ["resume"])
    assert "/" not in name and "tmp" not in name and "outputs" not in name
    assert name.startswith("domains=math,init_from@") and name.endswith(",trainer.seed=1")
    assert len(name) < 60
    assert name != run_dirname(["domains=[math]", f"init_from={other}", "trainer.seed=1"])
    assert run_dirname(["domains=[m2rl/math]", "model.name=/abs/model"]) == (
        "domains=m2rl_math,model.name@" + run_dirname(["model.name=/abs/model"]).split("@")[1]
    )


def test_run_folder_from_the_command_line_has_no_path(tmp_path):
    """As a user types it: Hydra resolves run_name from the task overrides."""
    import subprocess
    import sys

    sft = tmp_path / "outputs" / "tiny_sft" / "sft.max_steps=40" / "final"
    cmd = [
        sys.executable,
        "-m",
        "rlvr.train",
        "experiment=smoke",
        f"init_from='{sft}'",
        "trainer.seed=2",
        f"paths.output_root={tmp_path}",
        "--cfg",
        "all",
        "--resolve",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    run_dir = next(line for line in out.splitlines() if line.strip().startswith("dir:"))
    folder = run_dir.split("/smoke/", 1)[1].strip()
    assert folder.startswith("init_from@") and folder.endswith(",trainer.seed=2"), folder
    assert "outputs" not in folder and "max_steps" not in folder


def test_heldout_prompts_come_from_eval_seed_not_the_training_seed(tmp_path):
    """Every seed and arm of a study is measured on the same held-out prompts."""
    from rlvr.data.rows import build_domain_data

    def ids(*overrides: str) -> tuple[list[str], list[str]]:
        run = compose_run("experiment=smoke", *overrides, outputs=tmp_path)
        data = build_domain_data(run)
        return (
            [r["id"] for d in data.values() for r in d.train],
            [r["id"] for d in data.values() for r in d.heldout],
        )

    train0, held0 = ids("trainer.seed=0")
    train1, held1 = ids("trainer.seed=1")
    _, held_other_eval = ids("trainer.seed=0", "eval.seed=5")
    assert held0 and held0 == held1
    assert train0 != train1
    assert held_other_eval != held0


def test_sandbox_group_settings_reach_the_code_verifier(tmp_path):
    from rlvr.rewards.options import verifier_options
    from verifiers.registry import get_verifier

    run = compose_run(
        "domains=[code]",
        "sandbox=rlimit",
        "sandbox.memory_mb=512",
        "sandbox.time_limit_s=3",
        "sandbox.max_workers=1",
        outputs=tmp_path,
    )
    code = verifier_options(run)["code"]
    assert code == {
        "sandbox": "rlimit",
        "workers": 1,
        "memory_mb": 512,
        "sample_time_limit_s": 3,
        "max_tests": 20,  # conf/domains/code.yaml: the training reward's cap on tests
    }
    verifier = get_verifier("code", **code)  # every key is one the code verifier takes
    assert verifier.memory_mb == 512 and verifier.sample_time_limit_s == 3


def test_a_plan_accepts_data_files_an_earlier_stage_writes_but_not_a_bad_format(tmp_path):
    from rlvr.config import validate

    later = tmp_path / "math.jsonl"  # a study's filter stage writes it
    later.write_text("")
    run = compose_run("domains.math.train_tasks=[rows_math]", f"domains.math.data_files=[{later}]")
    later.unlink()
    with pytest.raises(ConfigError, match="does not exist"):
        validate(run)
    validate(run, check_paths=False)  # the plan: nothing there yet, and that is fine
    run.domains["math"].data_files = [str(tmp_path / "math.txt")]
    with pytest.raises(ConfigError, match="is not JSONL, JSON or Parquet"):
        validate(run, check_paths=False)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        (["backend=nope"], "unknown judge backend 'nope'; known: "),
        (
            ["backend=openai", "openai.base_url=http://127.0.0.1:{port}/v1", "openai.timeout_s=2"],
            "judge endpoint http://127.0.0.1:{port}/v1/models does not answer",
        ),
    ],
)
def test_a_bad_judge_setup_exits_cleanly_before_loading_a_model(judge, message, tmp_path):
    port = _closed_port()
    key = "domains.math.verifier_options.judge"
    args = [f"{key}.{o.format(port=port)}" for o in judge]
    code, output, _ = run_cli("domains=[judged/math]", "logger=none", *args, tmp_path=tmp_path)
    assert code == 2, output[-2000:]
    assert f"config error: {message.format(port=port)}" in output
    assert "Traceback" not in output and "Error executing job" not in output
    assert "Loading weights" not in output and "tiny model ready" not in output


def test_known_failures_map_to_clean_exits_and_the_cli_loads_no_verifiers():
    from rlvr.rewards.bridge import VerifierInfrastructureError
    from rlvr.runs.cli import known_failure
    from verifiers.judge.backend import JudgeSetupError

    assert known_failure(ConfigError("x")) == "config error"
    assert known_failure(JudgeSetupError("x")) == "config error"
    assert known_failure(VerifierInfrastructureError("x")) == "aborted"
    assert known_failure(ValueError("x")) is None and known_failure(RuntimeError("x")) is None
    # a merge or the report composes, validates and plans without the verifiers or TRL: their
    # imports cost every such stage seconds of start-up
    code = (
        "import sys; from hydra import compose, initialize_config_dir;"
        "from rlvr.runs.cli import CONF_DIR, plan_first, register_resolvers;"
        "from rlvr.config import register_configs, to_config, validate;"
        "register_configs(); register_resolvers();"
        "initialize_config_dir(config_dir=CONF_DIR, version_base='1.3');"
        "run = to_config(compose('train', overrides=['experiment=tiny_study', 'run_name=m']));"
        "validate(run); run.stage = 'merge'; plan_first(run);"
        "print(sorted(m for m in ('verifiers', 'trl', 'peft', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ([], True),  # the embedded model starts from random weights: it needs the warm start
        (["model=smollm2-135m-instruct"], False),  # a pretrained model keeps its own skills
        (["model=qwen3-4b-base"], False),
        (["model=smollm2-135m-instruct", "sft.enabled=true"], True),  # asked for, it runs
        (["sft=none"], False),
    ],
)
def test_the_warm_start_is_for_the_embedded_model_unless_asked_for(overrides, expected):
    from rlvr.training.stages import wants_warm_start

    assert wants_warm_start(compose_run(*overrides)) is expected


def test_an_entry_point_leaves_its_process_group_before_the_interpreter_exits(tmp_path):
    """gloo's worker threads still alive at interpreter teardown abort a finished rank
    ("terminate called without an active exception"); every entry point destroys the group
    when its body returns or raises."""
    script = tmp_path / "stage.py"
    script.write_text(
        "import sys\n"
        "import torch.distributed as dist\n"
        "from rlvr.runs.cli import hydra_entry\n"
        "seen = {}\n"
        "def body(run, run_dir):\n"
        "    store = 'file://' + str(run_dir / 'store')\n"
        "    dist.init_process_group('gloo', init_method=store, rank=0, world_size=1)\n"
        "    seen['up'] = dist.is_initialized()\n"
        "    if run.run_name == 'fails':\n"
        "        raise RuntimeError('the stage failed')\n"
        "try:\n"
        "    hydra_entry('report', body)\n"
        "finally:\n"
        "    print('up', seen.get('up'), 'after', dist.is_initialized(), flush=True)\n"
    )
    for name, exit_code in (("ok", 0), ("fails", 1)):
        argv = [f"run_name={name}", f"hydra.run.dir={tmp_path / name}", "logger=none"]
        done = subprocess.run(
            [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120, cwd=REPO
        )
        assert done.returncode == exit_code, done.stderr[-2000:]
        assert "up True after False" in done.stdout, done.stdout + done.stderr[-2000:]
