"""The building blocks the entry points call in sequence: model, data, scorer, SFT, GRPO, eval."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.data import DomainData, build_domain_data
from rlvr.rewards import ErrorBudget, Scorer, StepTimer, build_reward_functions
from rlvr.runs import (
    MetricsFileCallback,
    barrier,
    device_seconds,
    is_main_process,
    local_device,
    read_metrics,
    write_json,
)

log = logging.getLogger(__name__)


def starting_model(run: RunConfig) -> str:
    """``init_from`` when given, else the configured base model (tiny: built on first use)."""
    from rlvr.models import check_hub_model_available, resolve_model_path

    if run.init_from:
        return str(Path(run.init_from).expanduser().resolve())
    path = resolve_model_path(run.model, run.paths.cache_dir)
    check_hub_model_available(path)
    return path


def domain_data(run: RunConfig) -> dict[str, DomainData]:
    return build_domain_data(run)


def verifier_options(run: RunConfig) -> dict[str, dict[str, Any]]:
    """Per-verifier keyword options from the domain configs (``domains.<d>.verifier_options``)."""
    options: dict[str, dict[str, Any]] = {}
    for dc in run.domains.values():
        for name, opts in dc.verifier_options.items():
            options.setdefault(name, {}).update(opts)
    if "code" in run.domains:
        add_sandbox_options(run, options)
    return options


def add_sandbox_options(run: RunConfig, options: dict[str, dict[str, Any]]) -> None:
    """The ``sandbox`` group's settings for the code verifier, unless a domain sets its own."""
    import os

    code = options.setdefault("code", {})
    code.setdefault("sandbox", run.sandbox.backend)
    code.setdefault("workers", max(1, min(os.cpu_count() or 1, run.sandbox.max_workers)))
    code.setdefault("memory_mb", run.sandbox.memory_mb)
    code.setdefault("sample_time_limit_s", run.sandbox.time_limit_s)


def make_scorer(run: RunConfig) -> Scorer:
    """Batch scorer: the verifier worker pool (hard per-item time limit) for every domain."""
    from rlvr.scoring import build_scorer
    from verifiers import ReasoningFormat

    reasoning = ReasoningFormat(strip_think=run.algo.strip_think, format_gate=run.algo.format_gate)
    return build_scorer(
        reasoning,
        verifier_options(run),
        run.trainer.verifier_workers,
        run.trainer.verifier_timeout_s,
    )


def warm_start(run: RunConfig, base_path: str, out_dir: Path) -> tuple[str, float]:
    from rlvr.sft_training import run_sft

    path, seconds = run_sft(run, base_path, out_dir)
    return str(path), seconds


def heldout_eval(
    run: RunConfig, model_path: str, data: dict[str, DomainData], scorer: Scorer
) -> dict[str, Any]:
    """Avg@k (sampled) and greedy accuracy per domain on held-out rows; rank 0 only.

    Rank comes from the launcher's environment, not from accelerate's state object: the
    trainer resets that state when it finishes, after which every rank would call itself main.
    """
    from rlvr.generation import Decoding
    from rlvr.heldout import evaluate_rows
    from rlvr.models import load_model, load_tokenizer

    metrics: dict[str, Any] = {}
    rows = [r for d in data.values() for r in d.heldout]
    if is_main_process() and rows:
        e = run.eval
        decoding = Decoding(
            k=e.k, temperature=e.temperature, top_p=e.top_p, max_new_tokens=e.max_new_tokens
        )
        model = load_model(model_path, run.model).to(local_device())
        tokenizer = load_tokenizer(model_path, run.model)
        metrics = evaluate_rows(
            model,
            tokenizer,
            rows,
            decoding,
            scorer,
            with_greedy=e.greedy,
            batch_size=e.batch_size,
            seed=run.trainer.seed,
            format_gate=run.algo.format_gate,
        )
        del model
    barrier()
    return metrics


def no_eval(run: RunConfig, model_path: str, data: dict[str, DomainData], scorer: Scorer) -> dict:
    """``heldout_eval``'s stand-in when ``eval.in_run=false``: no held-out numbers in the run."""
    return {}


def _train_dataset(run: RunConfig, data: dict[str, DomainData]):
    from datasets import Dataset

    from rlvr.agent import training_row

    rows = [training_row(r) for d in data.values() for r in d.train]
    return Dataset.from_list(rows)


def _sampler_factory(run: RunConfig, dataset):
    """The mixture sampler over the concatenated dataset, keeping TRL's GRPO grouping."""
    from rlvr.mixture import MixtureSampler

    domains = dataset["domain"]
    weights = (
        {d: c.weight for d, c in run.domains.items()} if run.mixture.mode == "weighted" else None
    )

    def factory(mini_repeat_count: int, batch_size: int, repeat_count: int):
        return MixtureSampler(
            domains=domains,
            mini_repeat_count=mini_repeat_count,
            batch_size=batch_size,
            repeat_count=repeat_count,
            mode=run.mixture.mode,
            weights=weights,
            seed=run.trainer.seed,
        )

    return factory


def grpo(
    run: RunConfig, start_path: str, data: dict[str, DomainData], scorer: Scorer, run_dir: Path
):
    """TRL GRPO from ``start_path``; returns (final model folder, run facts)."""
    import time

    from rlvr.agent import prepare_tokenizer, trainer_kwargs
    from rlvr.grpo import RLVRGRPOTrainer, build_grpo_config
    from rlvr.models import load_tokenizer

    started = time.perf_counter()
    budget = ErrorBudget(run.trainer.max_infra_error_rate, run.trainer.infra_error_min_samples)
    timer = StepTimer()
    dataset = _train_dataset(run, data)
    trainer_ref: dict[str, Any] = {}
    metrics_cb = MetricsFileCallback(run_dir / "metrics.jsonl", trainer_ref, timer)
    trainer = RLVRGRPOTrainer(
        model=start_path,
        reward_funcs=build_reward_functions(
            sorted(run.domains), scorer, budget, timer, run.algo.format_gate
        ),
        args=build_grpo_config(run, run_dir / "checkpoints"),
        train_dataset=dataset,
        processing_class=prepare_tokenizer(load_tokenizer(start_path, run.model)),
        peft_config=_peft_config(run),
        callbacks=[metrics_cb],
        sampler_factory=_sampler_factory(run, dataset),
        **trainer_kwargs(dataset["environment"]),  # agent rows: TRL's environment_factory
    )
    trainer_ref["trainer"] = trainer
    # read now: the trainer resets accelerate's state when it finishes
    parallel = trainer.accelerator.distributed_type.value
    trainer.train(resume_from_checkpoint=_resume_checkpoint(run, run_dir))
    final = run_dir / "final"
    _save_final(trainer, final, run)
    facts = {
        "steps": trainer.state.global_step,
        "distributed_type": parallel,  # NO, MULTI_CPU (data parallel over gloo), FSDP, ...
        "seconds": time.perf_counter() - started,
        "generation_s": trainer.generation_seconds,
        "reward_s": timer.reward_s,
        "infra_errors": dict(budget.errors),
        "verifications": dict(budget.seen),
    }
    return str(final), facts


def _peft_config(run: RunConfig):
    if not run.peft.enabled:
        return None
    from peft import LoraConfig

    p = run.peft
    modules = p.target_modules[0] if p.target_modules == ["all-linear"] else list(p.target_modules)
    return LoraConfig(
        r=p.r,
        lora_alpha=p.lora_alpha,
        lora_dropout=p.lora_dropout,
        target_modules=modules,
        task_type="CAUSAL_LM",
    )


def _resume_checkpoint(run: RunConfig, run_dir: Path) -> str | bool | None:
    if not run.resume:
        return None
    from rlvr.checkpoints import latest_complete_checkpoint

    ckpt = latest_complete_checkpoint(run_dir / "checkpoints")
    if ckpt is None:  # a first start under resume=true (as a study runs it) is not a problem
        report = log.warning if any((run_dir / "checkpoints").glob("checkpoint-*")) else log.info
        report("resume=true but no complete checkpoint in %s: starting from step 0", run_dir)
        return None
    log.info("resuming from %s", ckpt)
    return str(ckpt)


def _save_final(trainer, final: Path, run: RunConfig) -> None:
    """Full weights in ``final/`` (LoRA adapters merged into the base first)."""
    model = trainer.model
    if run.peft.enabled and is_main_process():
        merged = trainer.accelerator.unwrap_model(model).merge_and_unload()
        merged.save_pretrained(str(final))
    else:
        trainer.save_model(str(final))
    if is_main_process():
        trainer.processing_class.save_pretrained(str(final))
    barrier()


def summarise(
    run: RunConfig,
    run_dir: Path,
    evals: dict,
    rl: dict,
    sft_seconds: float,
    total_s: float,
    extra: dict | None = None,
) -> dict:
    """``summary.json``: held-out results, run facts and compute; ``extra`` adds stage facts."""
    summary = {
        "experiment": run.experiment,
        "run_name": run.run_name,
        "run_dir": str(run_dir.resolve()),
        "domains": sorted(run.domains),
        "model": run.model.name,
        "heldout": evals,
        "rl": rl,
        "sft_seconds": sft_seconds,
        "total_seconds": total_s,
        "compute": device_seconds(total_s),
        "last_metrics": (read_metrics(run_dir / "metrics.jsonl") or [{}])[-1],
        **(extra or {}),
    }
    if is_main_process():
        write_json(run_dir / "summary.json", summary)
    return summary


def report(summary: dict) -> None:
    from rlvr.summary import format_summary

    if is_main_process():
        log.info("\n%s", format_summary(summary))
