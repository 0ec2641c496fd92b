"""Our typed config -> TRL's ``GRPOConfig``: the one place where run settings become trainer
arguments (GRPO's, and the fields every TRL trainer takes from the ``trainer`` group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trl import GRPOConfig

from rlvr.config import RunConfig
from rlvr.models.loading import model_init_kwargs
from rlvr.planning import plan_stage, sharded, vllm, world_size
from rlvr.runs.folders import gradient_checkpointing, use_cpu


def micro_batches(run: RunConfig, kind: str) -> tuple[int, int]:
    """(rows per device per forward/backward, micro-batches per optimizer step) of a training
    stage of ``kind`` (rl, sft, distill): one generation batch is one optimizer update, cut as
    ``trainer.micro_batch`` says (rlvr.planning)."""
    from rlvr.planning import micro_steps

    return micro_steps(run, kind, world_size(), sharded=sharded())


def ddp_timeout(run: RunConfig, kind: str) -> int:
    """Seconds a rank waits at a collective (TRL's ``ddp_timeout``): ``trainer.ddp_timeout_s``,
    else twice the plan's step time (one rank may wait out a whole step's generation and code
    grading), never below transformers' 30-minute default (rlvr.planning.budget)."""
    from rlvr.config import ConfigError
    from rlvr.planning.budget import ddp_timeout as from_step

    if run.trainer.ddp_timeout_s:
        return run.trainer.ddp_timeout_s
    try:
        step = plan_stage(run, "run", kind, world_size(), sharded()).step_seconds
    except ConfigError:  # the plan's own errors surface where the micro-batch is chosen
        step = None
    return from_step(step)


def report_to(run: RunConfig) -> list[str]:
    """None of transformers' reporters: a stage's W&B run is ``rlvr.tracking``'s, resumed with
    the stage and logged on the global step (transformers' callback opens a new run each start)."""
    return []


def vllm_utilization(run: RunConfig, kind: str) -> float:
    """TRL's ``vllm_gpu_memory_utilization``: the configured share, or ``auto``'s from this
    launch's plan of a ``kind`` stage (rlvr.planning.vllm)."""
    if not (vllm.colocated(run) and vllm.is_auto(run)):
        return vllm.resolved_utilization(run, None)
    plan = plan_stage(run, "run", kind, world_size(), sharded())
    w = plan.workload  # None where the model's shape is unknown: auto then says what to set
    return vllm.resolved_utilization(
        run,
        plan.parts if w else None,
        shape=plan.shape,
        device_bytes=plan.device_bytes,
        rows=w.generation_rows if w else 0,
        sequence=w.sequence if w else 0,
    )


def trainer_arguments(run: RunConfig, output_dir: Path, accumulation: int, kind: str = "rl") -> dict[str, Any]:
    """The fields every TRL trainer config takes from the ``trainer`` and ``model`` groups;
    ``accumulation``: micro-batches per optimizer step (``micro_batches``); ``kind``: the
    stage's kind (rl, distill), which sizes vLLM's ``auto`` share."""
    t = run.trainer
    return dict(
        output_dir=str(output_dir),
        run_name=f"{run.experiment}/{run.run_name}",
        report_to=report_to(run),
        seed=t.seed,
        data_seed=t.seed,
        save_strategy="steps" if t.save_steps > 0 else "no",
        save_steps=max(t.save_steps, 1),
        save_total_limit=t.save_total_limit,
        logging_steps=t.logging_steps,
        gradient_accumulation_steps=accumulation,
        gradient_checkpointing=gradient_checkpointing(t.gradient_checkpointing),
        bf16=t.bf16,
        use_cpu=use_cpu(t.use_cpu),  # several CPU processes train as one job
        dataloader_num_workers=t.dataloader_num_workers,
        use_vllm=t.use_vllm,
        vllm_mode=t.vllm_mode,
        vllm_server_base_url=t.vllm_server_base_url,
        vllm_gpu_memory_utilization=vllm_utilization(run, kind),
        vllm_enable_sleep_mode=t.vllm_enable_sleep_mode,
        chat_template_kwargs=dict(run.model.chat_template_kwargs) or None,
        model_init_kwargs=model_init_kwargs(run.model),
        disable_dropout=True,
        remove_unused_columns=False,
        save_only_model=False,  # optimizer + RNG state are needed to resume exactly
        ddp_timeout=ddp_timeout(run, kind),
    )


def build_grpo_config(run: RunConfig, output_dir: Path) -> GRPOConfig:
    """The only place our settings become TRL's: one field at a time, nothing implicit."""
    a, t = run.algo, run.trainer
    micro, accumulation = micro_batches(run, "rl")
    return GRPOConfig(
        **trainer_arguments(run, output_dir, accumulation),
        max_steps=t.max_steps,
        per_device_train_batch_size=micro,
        learning_rate=a.learning_rate,
        lr_scheduler_type=a.lr_scheduler_type,
        warmup_steps=a.warmup_steps,
        adam_beta1=a.adam_beta1,
        adam_beta2=a.adam_beta2,
        weight_decay=a.weight_decay,
        max_grad_norm=a.max_grad_norm,
        num_generations=a.num_generations,
        max_completion_length=a.max_completion_length,
        temperature=a.temperature,
        top_p=a.top_p,
        top_k=0,
        num_iterations=a.num_iterations,
        beta=a.beta,
        epsilon=a.epsilon,
        epsilon_high=a.epsilon_high,
        loss_type=a.loss_type,
        scale_rewards=a.scale_rewards,
        importance_sampling_level=a.importance_sampling_level,
        mask_truncated_completions=a.mask_truncated_completions,
        vllm_importance_sampling_correction=a.vllm_importance_sampling_correction,
        vllm_importance_sampling_mode=a.vllm_importance_sampling_mode,
        vllm_importance_sampling_clip_max=a.vllm_importance_sampling_clip_max,
        log_completions=t.log_completions and run.logger.name == "wandb",
        num_completions_to_print=t.num_completions_to_print,
    )
