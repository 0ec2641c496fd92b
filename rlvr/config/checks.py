"""Validation of a composed config: fail fast, naming the fix, before any model loads."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlvr.config.domain_files import check_domain_files
from rlvr.config.evaluation import check_k_by_task
from rlvr.config.filter import FilterConfig
from rlvr.config.schemas import ConfigError, RunConfig
from rlvr.data.schedule import MixtureSchedule
from tasks.schema import DOMAINS

log = logging.getLogger(__name__)

CHOICES: dict[str, tuple[str, ...]] = {
    "algo.loss_type": ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo"),
    "algo.scale_rewards": ("group", "batch", "none"),
    "algo.importance_sampling_level": ("token", "sequence"),
    "algo.vllm_importance_sampling_mode": (
        "token_truncate",
        "token_mask",
        "sequence_truncate",
        "sequence_mask",
    ),
    "mixture.mode": ("natural", "weighted", "adaptive"),
    "mixture.adaptive.signal": ("abs_advantage", "active_groups"),
    "mixture.schedule.kind": ("none", "piecewise", "linear"),
    "logger.name": ("wandb", "none"),
    "logger.mode": ("offline", "online", "disabled"),
    "trainer.vllm_mode": ("colocate", "server"),
    "eval.backend": ("transformers", "vllm"),
    "model.dtype": ("float32", "bfloat16", "float16", "auto"),
    "trainer.save_dtype": ("auto", "float32", "bfloat16", "float16"),
    "merge.dtype": ("float32", "bfloat16", "float16"),
    "merge.out_dtype": ("auto", "float32", "bfloat16", "float16"),
    "sandbox.backend": ("auto", "nsjail", "bwrap", "unshare", "rlimit"),
    "study.launcher": ("local", "submitit_local", "slurm"),
    "distill.teacher_device": ("train", "server"),
    "distill.objective": ("sampled_token", "full_vocab"),
}

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def to_config(cfg: DictConfig) -> RunConfig:
    """Convert a composed Hydra config to the typed object and validate it."""
    run: RunConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    validate(run, check_paths=not run.dry_run)  # a dry run plans before the inputs exist
    return run


def check_micro_batch(micro: object) -> None:
    if micro is None or micro == "auto":
        return
    if isinstance(micro, str) and micro.isdigit():
        micro = int(micro)
    if not isinstance(micro, int) or isinstance(micro, bool) or micro < 1:
        raise ConfigError(
            f"trainer.micro_batch={micro!r}: give a positive number of rows per device, "
            "auto (the largest that fits trainer.device_memory_gib), or null"
        )


def validate(run: RunConfig, check_paths: bool = True) -> None:
    """Fail fast, before any model loads, on values that cannot work.

    ``check_paths=False`` (a study's plan) skips inputs that earlier stages have yet to make.
    """
    for key, allowed in CHOICES.items():
        value: Any = run
        for part in key.split("."):
            value = getattr(value, part)
        if value not in allowed:
            raise ConfigError(f"{key}={value!r} is not valid; choose one of: {', '.join(allowed)}")
    if not run.domains:
        raise ConfigError(f"no domains selected; pass e.g. domains=[math]; valid: {', '.join(DOMAINS)}")
    for name, dc in run.domains.items():
        if name not in DOMAINS:
            raise ConfigError(f"unknown domain {name!r}; valid domains: {', '.join(DOMAINS)}")
        if not dc.train_tasks and not dc.eval_tasks:
            raise ConfigError(
                f"domains.{name} is set but has no tasks: a key like domains.{name}.weight "
                f"does not select a domain; select it with domains=[...,{name}]"
            )
    _check_positive(run)
    check_micro_batch(run.trainer.micro_batch)
    check_sft_schedule(run)
    mixture_schedule(run)
    mixture_adaptive(run)
    check_async_generation(run)
    check_parallel_reward(run)
    check_domain_files(run, check_paths)
    check_k_by_task(run.eval)
    check_filter(run.filter)
    if run.stage == "distill":
        check_distill(run, check_paths)
    check_model_source(run.model.name, run.paths.cache_dir)
    if check_paths and run.init_from and not Path(run.init_from).expanduser().exists():
        raise ConfigError(
            f"init_from={run.init_from!r} does not exist; point it at a finished run's "
            "checkpoint folder (e.g. outputs/<experiment>/<run>/final) or drop the override"
        )


def _check_positive(run: RunConfig) -> None:
    checks = {
        "algo.num_generations": run.algo.num_generations >= 2,
        "algo.prompts_per_step": run.algo.prompts_per_step >= 1,
        "algo.learning_rate": run.algo.learning_rate > 0,
        "algo.max_completion_length": run.algo.max_completion_length > 0,
        "algo.temperature": run.algo.temperature > 0,
        "algo.vllm_importance_sampling_clip_max": run.algo.vllm_importance_sampling_clip_max > 0,
        "trainer.max_steps": run.trainer.max_steps >= 0,
        "trainer.max_infra_error_rate": 0 <= run.trainer.max_infra_error_rate <= 1,
        "trainer.device_usable_fraction": 0 < run.trainer.device_usable_fraction <= 1,
        "trainer.memory_margin_gib": run.trainer.memory_margin_gib >= 0,
        "trainer.device_runtime_gib": run.trainer.device_runtime_gib >= 0,
        "eval.k": run.eval.k >= 1,
        "eval.temperature": run.eval.temperature >= 0,  # 0: greedy decoding alone
        "eval.top_p": 0 < run.eval.top_p <= 1,
        "eval.max_new_tokens": run.eval.max_new_tokens >= 1,
        "eval.in_run_token_budget": run.eval.in_run_token_budget >= 1,
        "eval.shard_prompts": run.eval.shard_prompts >= 0,  # 0: one shard
        "mixture.heldout_size": run.mixture.heldout_size >= 0,
    }
    for key, ok in checks.items():
        if not ok:
            raise ConfigError(f"{key} has an impossible value; see conf/ for sensible defaults")
    sft_counts = {"sft.examples_per_domain": run.sft.examples_per_domain}
    sft_counts |= {f"sft.domain_examples.{d}": n for d, n in run.sft.domain_examples.items()}
    if bad := [key for key, n in sft_counts.items() if n < 0]:
        raise ConfigError(f"{', '.join(bad)}: an SFT example count cannot be negative")
    if unknown := sorted(set(run.sft.domain_examples) - set(DOMAINS)):
        raise ConfigError(f"sft.domain_examples: unknown domains {unknown}; valid domains: {', '.join(DOMAINS)}")
    if run.trainer.use_vllm and run.trainer.vllm_mode == "server":
        if run.trainer.vllm_server_devices < 1:
            raise ConfigError(
                "trainer.vllm_server_devices must be >= 1 with trainer.vllm_mode=server: the "
                "GPUs the `trl vllm-serve` process holds (tensor x data parallel size)"
            )
    if run.mixture.mode == "weighted" and run.mixture.schedule.kind == "none":
        bad = {d: c.weight for d, c in run.domains.items() if c.weight < 0}
        if bad or sum(c.weight for c in run.domains.values()) <= 0:
            raise ConfigError(f"mixture=weighted needs non-negative weights with a positive sum: {bad}")


def check_sft_schedule(run: RunConfig) -> None:
    """The SFT warmup and cosine floor: one way to give each, and a floor only where the
    schedule reads it."""
    s = run.sft
    if not 0 <= s.warmup_ratio < 1:
        raise ConfigError(f"sft.warmup_ratio={s.warmup_ratio}: give a share of steps in [0, 1)")
    if s.warmup_ratio and s.warmup_steps:
        raise ConfigError(
            f"sft.warmup_ratio={s.warmup_ratio} and sft.warmup_steps={s.warmup_steps}: set one "
            "of them (the other to 0)"
        )
    floor = s.min_learning_rate is not None
    if floor != (s.lr_scheduler_type == "cosine_with_min_lr"):
        raise ConfigError(
            f"sft.lr_scheduler_type={s.lr_scheduler_type} with sft.min_learning_rate="
            f"{s.min_learning_rate}: a floor goes with lr_scheduler_type=cosine_with_min_lr "
            "and that schedule needs one"
        )


def mixture_adaptive(run: RunConfig):
    """The run's adaptive weights (``mixture.mode=adaptive``), or None; errors name the fix."""
    if run.mixture.mode != "adaptive":
        return None
    from rlvr.data.adaptive import AdaptiveSettings, AdaptiveWeights

    if run.mixture.schedule.kind != "none":
        raise ConfigError(
            "mixture.mode=adaptive sets the weights itself: drop mixture.schedule (mixture.schedule.kind=none)"
        )
    a = run.mixture.adaptive
    settings = AdaptiveSettings(a.signal, a.exploration, a.temperature, a.floor, a.window, a.lag, a.guard_drop)
    names = sorted(run.domains)
    try:
        return AdaptiveWeights(names, [run.domains[d].weight for d in names], settings)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def mixture_schedule(run: RunConfig) -> MixtureSchedule | None:
    """The run's validated ``mixture.schedule`` (None without one); errors name the fix."""
    cfg = run.mixture.schedule
    if cfg.kind == "none":
        if cfg.points:
            raise ConfigError(
                "mixture.schedule.points are set but mixture.schedule.kind=none ignores them: "
                "set mixture.schedule.kind=piecewise or linear (mixture=scheduled is piecewise)"
            )
        return None
    if run.mixture.mode != "weighted":
        raise ConfigError(
            f"mixture.schedule needs mixture.mode=weighted, not {run.mixture.mode!r}: "
            "use mixture=scheduled (or mixture=weighted) with the schedule"
        )
    for point in cfg.points:
        if unknown := sorted(set(point.weights) - set(DOMAINS)):
            raise ConfigError(
                f"mixture.schedule: point at step {point.step} names unknown domain(s) "
                f"{unknown}; valid domains: {', '.join(DOMAINS)}"
            )
    try:
        schedule = MixtureSchedule.from_points(
            cfg.kind, [(p.step, p.weights) for p in cfg.points], selected=sorted(run.domains)
        )
    except ValueError as err:
        raise ConfigError(f"mixture.schedule: {err}") from None
    if late := [s for s in schedule.steps if s >= run.trainer.max_steps > 0]:
        log.warning(
            "mixture.schedule: points at steps %s come at or after trainer.max_steps=%d and are never reached",
            late,
            run.trainer.max_steps,
        )
    return schedule


def check_async_generation(run: RunConfig) -> None:
    """``trainer.async_generation`` runs where its one-step-ahead copy can (rlvr.rollouts.lookahead)."""
    if not run.trainer.async_generation:
        return
    refusals = [
        (
            run.trainer.use_vllm,
            "trainer.use_vllm=false",
            "with vLLM, TRL 1.16's asynchronous trainer (trl.experimental.async_grpo) is the "
            "path, and it needs a `trl vllm-serve` server, NCCL weight transfer, FSDP2, "
            "flash-attention kernels fetched from the Hub and picklable module-level reward "
            "functions, and reads prompts in dataset order (no mixture sampler); rlvr does not "
            "drive it. Generate with transformers (trainer.use_vllm=false) for one-step-ahead "
            "generation, or set trainer.async_generation=false",
        ),
        (
            run.algo.num_iterations != 1,
            "algo.num_iterations=1",
            "several updates per generation batch already train on older samples; generating "
            "ahead is for one update per batch",
        ),
        (
            "agent" in run.domains,
            "no agent domain",
            "tool episodes generate turn by turn against live environments with the current "
            "policy; train agent rows with trainer.async_generation=false",
        ),
    ]
    for broken, need, why in refusals:
        if broken:
            raise ConfigError(f"trainer.async_generation=true needs {need}: {why}")


def check_filter(c: FilterConfig) -> None:
    """Fail fast on a pass-rate band or sampling setting that cannot work, naming the key."""
    if c.k < 1 or c.batch_size < 1:
        raise ConfigError(f"filter.k={c.k} and filter.batch_size={c.batch_size} must be >= 1")
    if not 0.0 <= c.low <= c.high <= 1.0:
        raise ConfigError(
            f"filter.low={c.low} and filter.high={c.high}: need 0 <= low <= high <= 1 "
            "(pass rates are shares of the k samples)"
        )
    if c.low == c.high and not (c.include_low and c.include_high):
        raise ConfigError(
            f"filter.low == filter.high == {c.low} keeps nothing unless both ends are "
            "included: set filter.include_low=true filter.include_high=true, or widen the band"
        )
    if c.temperature <= 0 or not 0 < c.top_p <= 1:
        raise ConfigError("filter.temperature must be > 0 and filter.top_p in (0, 1]")
    if c.max_new_tokens is not None and c.max_new_tokens < 1:
        raise ConfigError("filter.max_new_tokens must be >= 1 (or null: algo.max_completion_length)")


def check_parallel_reward(run: RunConfig) -> None:
    """A known preset and known term names (``rlvr.rewards.parallel``), before any model loads."""
    cfg = run.algo.parallel_reward
    if cfg.preset == "none" and not cfg.terms:
        return  # the default: nothing to check, and no stage pays the verifiers' import for it
    from rlvr.rewards.parallel import ParallelRewardError, reward_terms

    try:
        reward_terms(cfg.preset, dict(cfg.terms))
    except ParallelRewardError as exc:
        raise ConfigError(str(exc)) from None


def check_distill(run: RunConfig, check_paths: bool = True) -> None:
    """Every selected domain has a teacher (and a server when teachers are served)."""
    if run.mixture.mode == "adaptive":
        raise ConfigError(
            "mixture.mode=adaptive steers by GRPO's advantages, which distillation has none "
            "of: distil with mixture=natural or mixture=weighted"
        )
    d = run.distill
    if bad := sorted(set(d.teachers) - set(DOMAINS)):
        raise ConfigError(f"distill.teachers: unknown domains {bad}; valid: {', '.join(DOMAINS)}")
    needed = {"distill.teachers": d.teachers}
    if d.teacher_device == "server":
        needed["distill.teacher_servers"] = d.teacher_servers
        if d.objective != "sampled_token":
            raise ConfigError(
                "distill.teacher_device=server scores sampled tokens only (a server returns "
                "their log-probs, not the full distribution): set distill.objective=sampled_token"
            )
    for key, mapping in needed.items():
        if missing := [name for name in run.domains if not mapping.get(name)]:
            raise ConfigError(
                f"{key} has no entry for domain(s) {', '.join(missing)}: every row is scored by "
                f"its own domain's teacher; add {key}.{missing[0]}=<expert folder or URL>"
            )
    for domain, path in d.teachers.items() if check_paths else ():
        try:
            check_model_source(path, run.paths.cache_dir)
        except ConfigError as err:
            raise ConfigError(f"distill.teachers.{domain}: {err}") from None
    if not 0 <= d.beta <= 1 or d.samples_per_prompt < 1 or d.prompts_per_step < 1:
        raise ConfigError("distill: beta must lie in [0, 1]; prompts and samples per step >= 1")


def check_model_source(name: str, cache_dir: str) -> None:
    """The model must be the embedded tiny model, a packaged model whose wheel is installed,
    an existing folder, or a Hub id."""
    from rlvr.models.packaged import MissingPackageError, check_installed, is_packaged

    if name == "tiny":
        return
    if is_packaged(name):
        try:
            check_installed(name)
        except MissingPackageError as exc:
            raise ConfigError(str(exc)) from None
        return
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise ConfigError(f"model.name={name!r} is a folder without config.json; not a model")
        return
    looks_local = name.startswith((".", "/", "~")) or name.count("/") != 1
    if looks_local or not _HUB_ID.match(name):
        raise ConfigError(
            f"model.name={name!r} is neither an existing folder nor a Hub id (org/name); "
            "use model=tiny, a conf/model/*.yaml preset (e.g. model=smollm2-135m-instruct), "
            "or a path to a saved model"
        )
