"""Each stage's command line and config hash, from its overrides composed with Hydra's API.

The hash covers the stage's fully resolved config (so an edited experiment file counts, not
only a changed command line), its entry point, and the hashes of the stages it depends on:
a changed SFT invalidates every model trained from it.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from rlvr.config import ConfigError, RunConfig, validate
from rlvr.evaluation.reuse import EVAL_READS
from rlvr.runs.cli import is_searchpath
from rlvr.study.plan import GRPO_KINDS, Stage, arm_overrides_for

# The config each kind of stage reads: a changed GRPO learning rate reruns the GRPO stages and
# what depends on them, not the SFT. Kinds not listed (optional stages) hash everything but
# how a stage is tracked, resumed or launched.
HASHED: dict[str, tuple[str, ...]] = {
    "sft": ("model", "domains", "mixture", "sft", "trainer", "peft", "paths.data_dir"),
    "expert": ("model", "domains", "mixture", "algo", "trainer", "peft", "sandbox", "paths.data_dir", "init_from"),
    "merge": ("merge", "model.dtype"),
    "eval": EVAL_READS,
    "report": ("report",),
    "filter": (
        "model",
        "domains",
        "mixture",
        "algo.strip_think",
        "algo.format_gate",
        "algo.max_completion_length",
        "trainer.seed",
        "trainer.max_infra_error_rate",
        "trainer.infra_error_min_samples",
        "trainer.verifier_timeout_s",
        "sandbox",
        "paths.data_dir",
        "init_from",
        "filter",
    ),
}
HASHED["mixed"] = HASHED["cascade"] = HASHED["adaptive"] = HASHED["expert"]
# How paths inside the study folder enter a hash: the folder can move without rerunning.
STUDY_ROOT = "<study>"
# Settings no optional stage hashes: how a stage is tracked, resumed or launched, and the
# filter's, which only the filter stage reads (HASHED lists them for it).
UNHASHED = ("resume", "logger", "study", "stage", "run_name", "filter", "dry_run")
# Settings only the resource plan reads: a stage trains the same model whatever they say.
PLAN_ONLY = {
    "model": ("shape",),
    "trainer": ("device_memory_gib", "device_tflops", "plan_mfu", "plan_decode_mfu", "plan_prompt_tokens"),
}


# Settings added after study folders existed: at these values they enter no hash, so a folder
# from before them keeps its stages (config hashes cover settings, not code).
UNHASHED_AT = {
    ("trainer", "micro_batch"): None,
    ("trainer", "skip_zero_advantage"): True,
    ("sft", "trim_padding"): False,
    ("algo", "vllm_importance_sampling_mode"): "sequence_mask",
    ("algo", "vllm_importance_sampling_clip_max"): 3.0,
    ("sft", "warmup_ratio"): 0.0,
    ("sft", "min_learning_rate"): None,
    ("sft", "adam_beta1"): 0.9,
    ("sft", "adam_beta2"): 0.999,
}
# the dtype final models and merges are written in (a finished stage's weights stay usable)
UNHASHED_AT.update({("trainer", "save_dtype"): "auto", ("merge", "out_dtype"): "auto"})
# vLLM sleep mode off is how every stage ran before the setting existed
UNHASHED_AT[("trainer", "vllm_enable_sleep_mode")] = False


def _without_plan_only(resolved: dict) -> dict:
    """Without what the resource plan alone reads, without settings the run ignores (a
    mixture's adaptive knobs outside adaptive mode) and without later settings at their
    ``UNHASHED_AT`` values, so adding them reruns nothing."""
    out = dict(resolved)
    mixture = out.get("mixture")
    if isinstance(mixture, dict) and mixture.get("mode") != "adaptive":
        out["mixture"] = {k: v for k, v in mixture.items() if k != "adaptive"}
    for group, keys in PLAN_ONLY.items():
        if isinstance(out.get(group), dict):
            out[group] = {k: v for k, v in out[group].items() if k not in keys}
    for (group, key), value in UNHASHED_AT.items():
        section = out.get(group)
        if isinstance(section, dict) and key in section and section[key] == value:
            out[group] = {k: v for k, v in section.items() if k != key}
    return out


def _hashed_part(resolved: dict, kind: str) -> dict:
    resolved = _without_plan_only(resolved)
    if kind not in HASHED:
        # MT-OPD trains the same model whichever preset names it: a preset that adds arms to
        # a study's folder (m2rl_study_arms) reuses it
        unhashed = (*UNHASHED, "experiment") if kind == "distill" else UNHASHED
        return {k: v for k, v in resolved.items() if k not in unhashed}
    part: dict = {}
    for dotted in HASHED[kind]:
        value: object = resolved
        for key in dotted.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        part[dotted] = value
    return part


def user_overrides(argv: Sequence[str]) -> list[str]:
    """The study command's overrides that every stage inherits (its own ``study.*`` keys and
    Hydra's settings stay with the study, but for the user's config folders,
    ``hydra.searchpath``, which the stages compose from too)."""
    keep = []
    for arg in argv:
        key = arg.split("=", 1)[0].lstrip("+~")
        if is_searchpath(arg):
            keep.append(arg)
            continue
        if key == "study" or key.startswith(("study.", "hydra.", "hydra/")):
            continue
        keep.append(arg)
    return keep


def compose(overrides: Sequence[str], config_name: str = "train") -> DictConfig:
    """The root config with ``overrides``, without starting a Hydra application (groups
    composed once per distinct choice: ``rlvr.study.composition``)."""
    from rlvr.study.composition import compose as compose_once_per_groups

    return compose_once_per_groups(overrides, config_name)


def stage_overrides(base: Sequence[str], stage: Stage) -> list[str]:
    """The study's overrides, then the stage's; ``run_name`` names the stage (W&B, logs).
    A study-wide ``domains.<d>.*`` override (e.g. a domain's data files) reaches only the
    stages that select ``d``: in the others there is no ``domains.<d>`` to set."""
    return [*_for_domains_of(base, stage), f"run_name={stage.name}", *stage.overrides]


def _for_domains_of(base: Sequence[str], stage: Stage) -> list[str]:
    selected = [o.split("=", 1)[1] for o in stage.overrides if o.startswith("domains=")]
    if not selected:
        return list(base)
    names = [d.strip().rsplit("/", 1)[-1] for d in selected[-1].strip("[]").split(",")]
    return arm_overrides_for(base, names)


def stage_config(base: Sequence[str], stage: Stage) -> RunConfig:
    """Compose and validate one stage's config at plan time (inputs may not exist yet)."""
    try:
        return copy.deepcopy(_composed(tuple(stage_overrides(base, stage))))
    except ConfigError as err:
        raise ConfigError(f"stage {stage.name}: {err}") from None


@functools.lru_cache(maxsize=1024)
def _composed(overrides: tuple[str, ...]) -> RunConfig:
    """One composition per distinct command line in a process: Hydra's compose costs about a
    second, and plans (the study's, its tests') ask for the same stages again and again."""
    run: RunConfig = OmegaConf.to_object(compose(overrides))  # type: ignore[assignment]
    validate(run, check_paths=False)
    return run


def config_hash(
    run: RunConfig,
    stage: Stage,
    dep_hashes: Mapping[str, str],
    root: Path | None = None,
    root_as: str = STUDY_ROOT,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """The hash of one stage's config, entry point, own overrides and inputs' hashes.

    Paths inside the study folder ``root`` (the SFT model a stage starts from, an evaluation's
    output folder) enter as ``root_as``, so a study folder moved elsewhere keeps its stages.
    ``settings``: the stage's ``hashed_settings``, when the caller has them already.
    """
    part = dict(settings) if settings is not None else hashed_settings(run, stage)
    payload = {**part, "deps": {d: dep_hashes[d] for d in stage.deps}}
    if root is not None:
        payload = _rooted(payload, str(root), root_as)
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hashed_settings(run: RunConfig, stage: Stage) -> dict[str, Any]:
    """What a stage's hash covers besides its inputs: entry point, own overrides, config (as
    plain values: ``run`` came resolved from ``OmegaConf.to_object``)."""
    resolved = _plain(run)
    return {
        "entry": stage.entry,
        "overrides": [o for o in stage.overrides if not o.startswith(("hydra.", "run_name="))],
        "config": _hashed_part(resolved, stage.kind),
    }


def _plain(value: Any) -> Any:
    """Dataclasses as dicts, tuples as lists, recursively: what ``OmegaConf.to_container`` of
    the structured config gives, without rebuilding and validating a DictConfig per stage
    (0.05 s a stage, most of a plan's time once compositions are cached)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def readable_settings(settings: Mapping[str, Any], root: Path) -> dict[str, str]:
    """Dotted key -> JSON value of a stage's hashed settings, paths in the study folder as
    ``<study>/...`` (what a rerun's reason names)."""
    rooted = _rooted(dict(settings), str(root), STUDY_ROOT)
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            out[prefix] = json.dumps(value, sort_keys=True, default=str)

    walk("", {**rooted.get("config", {}), "entry": rooted.get("entry"), "overrides": rooted.get("overrides")})
    return out


def _rooted(value: Any, root: str, root_as: str) -> Any:
    """``value`` with ``root`` written as ``root_as`` wherever a string names it as a path (not
    where it begins a longer name: ``<root>2`` is another folder)."""
    if isinstance(value, str):
        return re.sub(re.escape(root) + r"(?![\w.-])", lambda _: root_as, value)
    if isinstance(value, dict):
        return {k: _rooted(v, root, root_as) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rooted(v, root, root_as) for v in value]
    return value


def hash_plan(
    stages: Sequence[Stage],
    configs: Mapping[str, RunConfig],
    root: Path | None = None,
    root_as: str = STUDY_ROOT,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """Config hash of every stage, dependencies first (their hashes enter their dependents')."""
    hashes: dict[str, str] = {}
    for stage in stages:
        known = settings.get(stage.name) if settings is not None else None
        hashes[stage.name] = config_hash(configs[stage.name], stage, hashes, root, root_as, known)
    return hashes


def training_steps(run: RunConfig, kind: str) -> int:
    """The optimizer steps a training stage of ``kind`` runs, read from its composed config."""
    if kind == "sft":
        return run.sft.max_steps
    if kind == "distill" and run.distill.max_steps is not None:
        return run.distill.max_steps
    return run.trainer.max_steps


def sampled_tokens(run: RunConfig, kind: str) -> int:
    """Completion tokens a GRPO stage may sample: the scheduler's size of the stage."""
    if kind not in GRPO_KINDS:
        return 0
    a = run.algo
    per_step = a.prompts_per_step * a.num_generations * a.max_completion_length
    return training_steps(run, kind) * per_step


def command(stage: Stage, base: Sequence[str], accelerate: str | None) -> list[str]:
    """argv of the stage: ``python -m <entry>`` or, for training with a config named,
    ``accelerate launch --config_file conf/accelerate/<name>.yaml -m <entry>``."""
    args = stage_overrides(base, stage)
    if accelerate and stage.multiprocess:
        from rlvr.runs.cli import CONF_DIR

        config = Path(CONF_DIR) / "accelerate" / f"{accelerate}.yaml"
        launcher = [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(config),
        ]
        return [*launcher, "-m", stage.entry, *args]
    return [sys.executable, "-m", stage.entry, *args]


class Layout(NamedTuple):
    """What ``conf/accelerate/<name>.yaml`` gives a training stage."""

    processes: int  # accelerate's num_processes: the total over every machine
    sharded: bool  # FSDP: weights, gradients and optimizer state split over the processes
    machines: int = 1
    port: int = 29500


@functools.cache  # one read per config per process: every stage of a plan asks
def accelerate_layout(accelerate: str | None) -> Layout:
    if not accelerate:
        return Layout(1, False)
    import yaml

    from rlvr.runs.cli import CONF_DIR

    path = Path(CONF_DIR) / "accelerate" / f"{accelerate}.yaml"
    if not path.is_file():
        raise ConfigError(f"study.accelerate={accelerate!r}: no file {path}")
    data = yaml.safe_load(path.read_text()) or {}
    return Layout(
        int(data.get("num_processes", 1)),
        data.get("distributed_type") == "FSDP",
        int(data.get("num_machines", 1)),
        int(data.get("main_process_port", 29500)),
    )


def processes(stage: Stage, accelerate: str | None) -> int:
    """Processes the stage runs (device-seconds = processes x wall seconds)."""
    if not (accelerate and stage.multiprocess):
        return 1
    return accelerate_layout(accelerate).processes


def machines(stage: Stage, accelerate: str | None) -> int:
    """Nodes the stage spans: accelerate's ``num_machines`` for training stages, else 1."""
    if not (accelerate and stage.multiprocess):
        return 1
    return accelerate_layout(accelerate).machines


def node_argv(argv: Sequence[str], rank: int | str, main_ip: str, port: int) -> list[str]:
    """One node's ``accelerate launch`` command: its ``machine_rank`` and the main node's
    address and port, given on the command line over the config file's placeholders."""
    argv = list(argv)
    at = argv.index("accelerate.commands.launch") + 1
    flags = ["--machine_rank", str(rank), "--main_process_ip", main_ip, "--main_process_port", str(port)]
    return [*argv[:at], *flags, *argv[at:]]
