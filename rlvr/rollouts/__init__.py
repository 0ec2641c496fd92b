"""GRPO rollouts drawn by rlvr's KV-cache samplers instead of TRL's: single turns, tool episodes, one step ahead.

``single_turn`` replaces ``model.generate`` for plain prompts, ``tool_loop`` replaces TRL's
tool loop for agent rows, ``lookahead`` samples the next batch on a copy of the policy. The
first two run inside TRL's own generation context (``generation_context``) and only where
the sampler draws what TRL would (``unsupported``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from rlvr.training import trl_seam


def unsupported(trainer: Any) -> str | None:
    """Why this trainer's generation must stay TRL's (None: the KV-cache sampler can draw it)."""
    accelerator = trainer.accelerator
    sharded = accelerator.num_processes > 1 and not data_parallel(accelerator)
    if sharded and _kind(accelerator) != "FSDP":
        # FSDP ranks sample in lockstep (rlvr.rollouts.lockstep); other sharding is untested
        return f"weights sharded by {_kind(accelerator)} (rlvr's samplers keep FSDP ranks in step)"
    if trainer.use_vllm or trainer.use_transformers_continuous_batching or trl_seam.is_vlm(trainer):
        return "generation is not plain transformers on a text model"
    if trainer.args.generation_kwargs or trainer.top_k or trainer.min_p:
        return "sampling settings beyond temperature and top-p"
    if trainer.repetition_penalty != 1.0:
        return "a repetition penalty"
    return None


def data_parallel(accelerator: Any) -> bool:
    """Whether each process holds whole weights (one process, or DDP on CPUs or GPUs): then
    sampling from the unwrapped model is local to each rank, whatever its rows do."""
    kind = _kind(accelerator)
    return kind == "NO" or kind.startswith("MULTI_")


def _kind(accelerator: Any) -> str:
    return str(getattr(accelerator.distributed_type, "value", accelerator.distributed_type))


@contextmanager
def generation_context(trainer: Any):
    """TRL's context for its transformers generation: the unwrapped model, gradient
    checkpointing off, no autograd, full FSDP parameters; yields the model to sample from,
    which keeps sharded ranks in step (``rlvr.rollouts.lockstep``)."""
    import torch
    from trl.extras.profiling import profiling_context
    from trl.models import unwrap_model_for_generation

    from rlvr.rollouts.lockstep import in_step

    with (
        profiling_context(trainer, "transformers.generate"),
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
        trl_seam.distributed(trainer).summon_full_params(trainer.model_wrapped, recurse=False),
        in_step(model, trainer.accelerator) as stepped,
    ):
        yield stepped
