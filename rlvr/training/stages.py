"""The building blocks the entry points call in sequence: model, data, scorer, SFT, GRPO, eval."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.data.rows import DomainData, build_domain_data
from rlvr.rewards.bridge import ErrorBudget, Scorer, StepTimer, build_reward_functions
from rlvr.rewards.options import verifier_options
from rlvr.runs.accounting import training_compute
from rlvr.runs.folders import (
    MetricsFileCallback,
    barrier,
    is_main_process,
    local_device,
    read_metrics,
    write_json,
)
from rlvr.tracking.evaluation_log import log_heldout
from rlvr.training.checkpoints import resume_checkpoint, train_from

log = logging.getLogger(__name__)


def starting_model(run: RunConfig) -> str:
    """``init_from`` when given, else the configured base model (tiny: built on first use)."""
    from rlvr.models.loading import check_hub_model_available, resolve_model_path

    if run.init_from:
        return str(Path(run.init_from).expanduser().resolve())
    path = resolve_model_path(run.model, run.paths.cache_dir)
    check_hub_model_available(path)
    return path


def domain_data(run: RunConfig) -> dict[str, DomainData]:
    return build_domain_data(run)


def training_data(run: RunConfig) -> dict[str, DomainData]:
    """A training stage's rows: a selected domain without training rows stops it here."""
    from rlvr.data.row_counts import require_rows

    data = build_domain_data(run)
    require_rows(run, {d: dd.train for d, dd in data.items()})
    return data


def make_scorer(run: RunConfig) -> Scorer:
    """Batch scorer: the verifier worker pool (hard per-item time limit) for every domain."""
    from rlvr.rewards.scoring import build_scorer
    from verifiers import ReasoningFormat

    reasoning = ReasoningFormat(strip_think=run.algo.strip_think, format_gate=run.algo.format_gate)
    return build_scorer(
        reasoning,
        verifier_options(run),
        run.trainer.verifier_workers,
        run.trainer.verifier_timeout_s,
    )


def wants_warm_start(run: RunConfig) -> bool:
    """Whether rlvr.train runs the SFT warm start: ``sft.enabled``, or when unset (the
    default), only for the embedded tiny model, which starts from random weights."""
    if run.init_from is not None:
        return False
    if run.sft.enabled is not None:
        return run.sft.enabled
    embedded = run.model.name == "tiny"
    if not embedded:
        log.info("no SFT warm start for %s (pretrained); sft.enabled=true forces one", run.model.name)
    return embedded


def warm_start(run: RunConfig, base_path: str, out_dir: Path) -> tuple[str, float]:
    from rlvr.training.sft import run_sft

    path, seconds = run_sft(run, base_path, out_dir)
    return str(path), seconds


def heldout_eval(run: RunConfig, model_path: str, data: dict[str, DomainData], scorer: Scorer) -> dict[str, Any]:
    """Avg@k (sampled) and greedy accuracy per domain on held-out rows, spread over the ranks.

    The rows are capped to ``eval.in_run_token_budget`` generated tokens; each rank scores
    every world-th row and the per-row results are gathered, so every rank returns the same
    metrics. Runs that generate with vLLM leave it to ``rlvr.evaluate`` (the colocated
    engine holds the GPU memory a second one would need). Rank comes from the launcher's
    environment: the trainer resets accelerate's state when it finishes.
    """
    from rlvr.evaluation.generation import Decoding
    from rlvr.evaluation.heldout import cap_to_token_budget, score_rows, summarise_rows
    from rlvr.models.chat_format import ChatFormat
    from rlvr.models.loading import load_model, load_tokenizer
    from rlvr.runs.folders import all_gather, join_process_group, rank_and_world

    e = run.eval
    rows = [r for d in data.values() for r in d.heldout]
    if not rows:
        return {}
    if run.trainer.use_vllm:
        log.info(
            "held-out evaluation of %s is left to the evaluation stage under vLLM: run "
            "python -m rlvr.evaluate 'eval.models=[%s]' eval.backend=vllm",
            model_path,
            model_path,
        )
        return {}
    decoding = Decoding(k=e.k, temperature=e.temperature, top_p=e.top_p, max_new_tokens=e.max_new_tokens)
    rows = cap_to_token_budget(rows, decoding, e.greedy, e.in_run_token_budget)
    join_process_group(run.trainer.use_cpu)
    rank, world = rank_and_world()
    mine = rows[rank::world]
    results = []
    if mine:
        model = load_model(model_path, run.model).to(local_device())
        tokenizer = load_tokenizer(model_path, run.model)
        results = score_rows(
            model,
            tokenizer,
            mine,
            decoding,
            scorer,
            with_greedy=e.greedy,
            batch_size=e.batch_size,
            seed=run.trainer.seed + rank,
            format_gate=run.algo.format_gate,
            chat=ChatFormat.of(run.model),
        )
        del model
    return summarise_rows(all_gather(results), e.k)


def no_eval(run: RunConfig, model_path: str, data: dict[str, DomainData], scorer: Scorer) -> dict:
    """``heldout_eval``'s stand-in when ``eval.in_run=false``: no held-out numbers in the run."""
    return {}


def _train_dataset(run: RunConfig, data: dict[str, DomainData]):
    from datasets import Dataset

    from rlvr.data.agent import training_row

    rows = [training_row(r) for d in data.values() for r in d.train]
    return Dataset.from_list(rows)


def _sampler_factory(run: RunConfig, dataset):
    """The mixture sampler over the concatenated dataset, keeping TRL's GRPO grouping."""
    from rlvr.config.checks import mixture_adaptive, mixture_schedule
    from rlvr.data.mixture import MixtureSampler

    domains = dataset["domain"]
    schedule = mixture_schedule(run)  # weights by training step, or None
    weights = (
        {d: c.weight for d, c in run.domains.items()} if run.mixture.mode == "weighted" and schedule is None else None
    )

    def factory(mini_repeat_count: int, batch_size: int, repeat_count: int, steps_per_batch: int = 1):
        return MixtureSampler(
            domains=domains,
            mini_repeat_count=mini_repeat_count,
            batch_size=batch_size,
            repeat_count=repeat_count,
            mode=run.mixture.mode,
            weights=weights,
            seed=run.trainer.seed,
            schedule=schedule,
            steps_per_batch=steps_per_batch,
            adaptive=mixture_adaptive(run),  # a fresh bandit per sampler: None unless adaptive
        )

    return factory


def grpo(run: RunConfig, start_path: str, data: dict[str, DomainData], scorer: Scorer, run_dir: Path):
    """TRL GRPO from ``start_path``; returns (final model folder, run facts)."""
    import time

    from rlvr.data.agent import prepare_tokenizer, trainer_kwargs
    from rlvr.models.loading import load_tokenizer
    from rlvr.rewards.parallel import build_parallel_reward
    from rlvr.tracking.wandb_run import open_stage_run
    from rlvr.training.grpo import RLVRGRPOTrainer
    from rlvr.training.trainer_args import build_grpo_config

    started = time.perf_counter()
    budget = ErrorBudget(run.trainer.max_infra_error_rate, run.trainer.infra_error_min_samples)
    timer = StepTimer()
    dataset = _train_dataset(run, data)
    trainer_ref: dict[str, Any] = {}
    tracker = open_stage_run(run, run_dir, "rl")  # None unless logger=wandb
    metrics_cb = MetricsFileCallback(run_dir / "metrics.jsonl", trainer_ref, timer, tracker)
    tokenizer = prepare_tokenizer(load_tokenizer(start_path, run.model))
    parallel = build_parallel_reward(run, tokenizer)  # algo.parallel_reward, or None
    trainer = RLVRGRPOTrainer(
        model=start_path,
        reward_funcs=build_reward_functions(
            sorted(run.domains), scorer, budget, timer, run.algo.format_gate, parallel
        ),
        args=build_grpo_config(run, run_dir / "checkpoints"),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=_peft_config(run),
        callbacks=[metrics_cb],
        sampler_factory=_sampler_factory(run, dataset),
        async_generation=run.trainer.async_generation,
        tool_episodes=run.trainer.tool_episodes,
        kv_sampling=run.trainer.kv_sampling,
        score_ahead=run.trainer.score_ahead,
        trim_padding=run.trainer.trim_padding,
        share_prompts=run.trainer.share_prompts,
        skip_zero_advantage=run.trainer.skip_zero_advantage,
        **trainer_kwargs(dataset["environment"]),  # agent rows: TRL's environment_factory
    )
    trainer_ref["trainer"] = trainer
    # read now: the trainer resets accelerate's state when it finishes
    parallel = trainer.accelerator.distributed_type.value
    train_from(trainer, resume_checkpoint(run, run_dir), run.trainer.save_every_min)
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
        "tokens": trainer.state.num_input_tokens_seen or _logged_tokens(trainer),
        "generation": trainer.generation_facts(),  # async: staleness, waits
        "update": trainer.update_facts(),  # rows left out of the update (zero advantage)
        **peak_memory(),
    }
    return str(final), facts


def _logged_tokens(trainer) -> int:
    """Prompt and completion tokens of the whole run, from TRL's cumulative ``num_tokens``."""
    logged = [h.get("num_tokens") for h in trainer.state.log_history if "num_tokens" in h]
    return int(logged[-1]) if logged else 0


def peak_memory() -> dict[str, float | None]:
    """This process's peak resident memory and, on a GPU, peak allocated device memory (GiB)."""
    import resource

    import torch

    gpu = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None
    return {
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "peak_gpu_gib": gpu,
    }


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


def _save_final(trainer, final: Path, run: RunConfig) -> None:
    """Full weights and the tokenizer in ``final/`` (LoRA merged, FSDP shards gathered)."""
    from rlvr.training.saving import save_full_model

    save_full_model(trainer, final, lora=run.peft.enabled, dtype=run.trainer.save_dtype)
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
    verb: str = "rl",
) -> dict:
    """``summary.json``: held-out results, run facts and compute; ``extra`` adds stage facts.
    The held-out results also go to the stage's W&B run (``verb``: its kind) where it is on."""
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
        "compute": training_compute(run, total_s),  # with a generation server's devices
        "last_metrics": (read_metrics(run_dir / "metrics.jsonl") or [{}])[-1],
        **(extra or {}),
    }
    if is_main_process():
        write_json(run_dir / "summary.json", summary)
        log_heldout(run, run_dir, verb, evals)
    return summary


def report(summary: dict) -> None:
    from rlvr.runs.summary import format_summary

    if is_main_process():
        log.info("\n%s", format_summary(summary))
