"""GRPO rollouts drawn by rlvr's KV-cache samplers instead of TRL's: single turns, tool episodes, one step ahead.

``single_turn`` replaces ``model.generate`` for plain prompts, ``tool_loop`` replaces TRL's
tool loop for agent rows, ``lookahead`` samples the next batch on a copy of the policy. The
first two run inside TRL's own generation context (``generation_context``) and only where
the sampler draws what TRL would (``unsupported``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any


def unsupported(trainer: Any) -> str | None:
    """Why this trainer's generation must stay TRL's (None: the KV-cache sampler can draw it)."""
    if trainer.accelerator.num_processes > 1 and not data_parallel(trainer.accelerator):
        # ranks run different numbers of forwards (their rows end at different steps), and
        # every forward of sharded weights gathers them on all ranks; TRL's generate syncs them
        return "weights sharded over the processes (FSDP, DeepSpeed)"
    if trainer.use_vllm or trainer.use_transformers_continuous_batching or trainer._is_vlm:
        return "generation is not plain transformers on a text model"
    if trainer.args.generation_kwargs or trainer.top_k or trainer.min_p:
        return "sampling settings beyond temperature and top-p"
    if trainer.repetition_penalty != 1.0:
        return "a repetition penalty"
    return None


def data_parallel(accelerator: Any) -> bool:
    """Whether each process holds whole weights (one process, or DDP on CPUs or GPUs): then
    sampling from the unwrapped model is local to each rank, whatever its rows do."""
    kind = str(getattr(accelerator.distributed_type, "value", accelerator.distributed_type))
    return kind == "NO" or kind.startswith("MULTI_")


@contextmanager
def generation_context(trainer: Any):
    """TRL's context for its transformers generation: the unwrapped model, gradient
    checkpointing off, no autograd, full FSDP parameters; yields the model to sample from."""
    import torch
    from trl.extras.profiling import profiling_context
    from trl.models import unwrap_model_for_generation

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
        trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
    ):
        yield model
