"""One stage's resource plan: its workload per device, the micro-batch, memory and step time.

A training stage's global batch is fixed by its settings (GRPO: prompts x generations; MT-OPD:
prompts x samples; SFT: batch size x processes x accumulation). The micro-batch only decides
how each device's share is cut into forward/backward passes: ``trainer.micro_batch=auto``
picks the largest cut that fits ``trainer.device_memory_gib``, so the global batch and the
optimizer step are those of the settings whatever the devices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from rlvr.config import ConfigError, RunConfig
from rlvr.planning.memory import GIB, Workload, memory
from rlvr.planning.shapes import ModelShape, model_shape
from rlvr.planning.step_time import step_seconds
from rlvr.planning.vllm import training_share

TRAINING = ("sft", "expert", "mixed", "cascade", "adaptive", "rl", "distill")


def world_size() -> int:
    """Processes of this launch (accelerate/torchrun set ``WORLD_SIZE``; 1 when run plainly)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def sharded() -> bool:
    """Whether accelerate launched this process under FSDP (weights split over the ranks)."""
    return os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true")


# attention implementations that build a B x 1 x S x S mask for padded rows (None: sdpa)
MASKED_ATTENTION = (None, "sdpa", "eager")
# what to change when a component does not fit
REMEDY = {
    "activations": "trainer.micro_batch=auto (or a smaller trainer.micro_batch), with "
    "trainer.gradient_checkpointing=true",
    "logits": "trainer.micro_batch=auto (or a smaller trainer.micro_batch)",
    "kv cache": "trainer.use_vllm=true, or fewer rows per step per device (more processes)",
    "teachers": "distill.teacher_device=server (one vLLM server per teacher)",
    "vllm": "a lower trainer.vllm_gpu_memory_utilization, or trainer.vllm_mode=server",
    "weights": "more processes under FSDP (study.accelerate=gpu_fsdp2), or peft=lora",
    "attention mask": "trainer.micro_batch=auto (or a smaller trainer.micro_batch), or "
    "model.attn_implementation=flash_attention_2 (no mask; needs the flash-attn package)",
}
for _part in (
    "gradients",
    "optimizer",
    "fsdp gather",
    "root unit",
    "reference",
    "ddp buckets",
    "autocast copies",
):
    REMEDY[_part] = REMEDY["weights"]


@dataclass(frozen=True)
class StagePlan:
    stage: str
    kind: str
    processes: int
    shape: ModelShape | None = None
    workload: Workload | None = None
    rows_per_step: int = 0  # sequences per optimizer step (training) or per batch (eval)
    parts: dict[str, float] = field(default_factory=dict)  # bytes per device
    step_seconds: float | None = None
    device_bytes: float | None = None  # trainer.device_memory_gib
    note: str = ""
    usable_fraction: float = 1.0  # trainer.device_usable_fraction: what torch can allocate

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def tokens_per_step(self) -> int:
        return self.rows_per_step * self.workload.sequence if self.workload else 0

    @property
    def fits(self) -> bool:
        return self.device_bytes is None or self.total <= self.usable_bytes

    @property
    def usable_bytes(self) -> float:
        return (self.device_bytes or 0.0) * self.usable_fraction

    def problem(self) -> str:
        """Why the stage cannot fit, and the setting to change."""
        assert self.workload is not None
        largest = max(self.parts, key=self.parts.__getitem__)
        return (
            f"stage {self.stage} needs {self.total / GIB:.1f} GiB per device (margin "
            f"included), more than the {self.usable_bytes / GIB:.1f} GiB usable of "
            f"trainer.device_memory_gib={(self.device_bytes or 0) / GIB:g} x "
            f"trainer.device_usable_fraction={self.usable_fraction:g} (largest: {largest} "
            f"{self.parts[largest] / GIB:.1f} GiB at micro-batch {self.workload.micro_batch} x "
            f"{self.workload.sequence} tokens); set {REMEDY.get(largest, REMEDY['weights'])}"
        )


def _weight_bytes(run: RunConfig) -> int:
    """The compute width: bf16 under trainer.bf16 (autocast, or FSDP2's param_dtype), else the
    loaded dtype."""
    return 2 if run.trainer.bf16 else _loaded_bytes(run)


def _loaded_bytes(run: RunConfig) -> int:
    """Bytes a parameter as ``model.dtype`` loads it (auto: 4, the wider, for a plan that errs
    high)."""
    return 2 if run.model.dtype in ("bfloat16", "float16") else 4


def _precision(run: RunConfig, sharded: bool) -> dict:
    """Widths as the runtime stores them: under FSDP2 with mixed precision Accelerate upcasts
    every trainable parameter to a float32 master (its gradients and AdamW moments follow);
    without it, and outside FSDP, parameters stay as loaded (autocast computes in bf16)."""
    loaded = _loaded_bytes(run)
    master = 4 if sharded and run.trainer.bf16 else loaded
    return {
        "master_bytes": master,
        "frozen_bytes": loaded,
        "attention_mask": run.model.attn_implementation in MASKED_ATTENTION,
    }


def _adapters(run: RunConfig, shape: ModelShape) -> int:
    """LoRA's trainable parameters: r x (in + out) for each adapted projection of each layer
    (``all-linear`` or the named ones; the LM head is never adapted); 0 without LoRA."""
    if not run.peft.enabled:
        return 0
    h, q, kv, i = shape.hidden_size, shape.q_dim, shape.kv_dim, shape.intermediate_size
    widths = {
        "q_proj": h + q,
        "k_proj": h + kv,
        "v_proj": h + kv,
        "o_proj": q + h,
        "gate_proj": h + i,
        "up_proj": h + i,
        "down_proj": i + h,
    }
    targets = list(run.peft.target_modules)
    named = widths if "all-linear" in targets else {k: widths[k] for k in targets if k in widths}
    return run.peft.r * shape.num_hidden_layers * sum(named.values())


def _rows_per_device(run: RunConfig, kind: str, processes: int) -> tuple[int, str]:
    """Rows one device trains per optimizer step, and the settings that make them."""
    if kind == "sft":  # sft.batch_size rows per device per step
        return run.sft.batch_size, "sft.batch_size"
    if kind == "distill":
        total = run.distill.prompts_per_step * run.distill.samples_per_prompt
        what = "distill.prompts_per_step*distill.samples_per_prompt"
    else:
        total = run.algo.prompts_per_step * run.algo.num_generations
        what = "algo.prompts_per_step*algo.num_generations"
    if total % processes:
        raise ConfigError(
            f"{what}={total} completions per step must divide evenly over {processes} "
            "processes; change the prompts per step or the process count"
        )
    return total // processes, what


def _base_workload(run: RunConfig, kind: str, processes: int, sharded: bool) -> Workload:
    t, prompt = run.trainer, run.trainer.plan_prompt_tokens
    split = sharded and processes > 1
    common = dict(
        kind="train",
        processes=processes,
        sharded=split,
        weight_bytes=_weight_bytes(run),
        micro_batch=1,
        accumulation=1,
        checkpointing=bool(t.gradient_checkpointing),
        **_precision(run, split),
    )
    generation = "vllm" if t.use_vllm else "cache"
    share = training_share(run)  # rlvr.planning.vllm: the engine beside the training pass
    if kind == "sft":
        length = run.sft.max_length
        return Workload(**common, sequence=length, completion=length)
    rows, _ = _rows_per_device(run, kind, processes)
    if kind == "distill":
        d = run.distill
        teachers = len(run.domains) if d.teacher_device == "train" else 0
        return Workload(
            **common,
            sequence=prompt + d.max_completion_length,
            completion=d.max_completion_length,
            logits="fused" if d.objective == "sampled_token" else "whole",
            generation=generation,
            generation_rows=rows,
            vllm_share=share,
            teachers=teachers,
        )
    a = run.algo
    return Workload(
        **common,
        sequence=prompt + a.max_completion_length,
        completion=a.max_completion_length,
        generation=generation,
        generation_rows=rows,
        vllm_share=share,
        reference=a.beta > 0,
    )


def _cuts(rows: int) -> list[int]:
    """Micro-batch sizes that divide ``rows``, largest first."""
    return [m for m in range(rows, 0, -1) if rows % m == 0]


def micro_steps(
    run: RunConfig,
    kind: str,
    processes: int,
    shape: ModelShape | None = None,
    sharded: bool = True,
) -> tuple[int, int]:
    """(rows per device per forward/backward, micro-batches per optimizer step)."""
    rows, what = _rows_per_device(run, kind, processes)
    choice = run.trainer.micro_batch
    if choice is None:
        if kind == "sft":
            return rows, 1
        accumulation = run.trainer.gradient_accumulation_steps
        if rows % accumulation:
            raise ConfigError(
                f"{what}: {rows} rows per device per step do not divide into "
                f"trainer.gradient_accumulation_steps={accumulation}; change either, or set "
                "trainer.micro_batch=auto"
            )
        return rows // accumulation, accumulation
    if choice == "auto":
        return _auto_micro_batch(run, kind, processes, rows, shape, sharded)
    if isinstance(choice, str) and not choice.isdigit():
        raise ConfigError(f"trainer.micro_batch={choice!r}: give a number of rows, auto or null")
    micro = int(choice)
    if micro < 1 or rows % micro:
        raise ConfigError(
            f"trainer.micro_batch={micro} must divide the {rows} rows each device trains per "
            f"step ({what} over {processes} processes); try one of {_cuts(rows)[:8]} or auto"
        )
    return micro, rows // micro


def _auto_micro_batch(
    run: RunConfig,
    kind: str,
    processes: int,
    rows: int,
    shape: ModelShape | None,
    sharded: bool,
) -> tuple[int, int]:
    if run.trainer.device_memory_gib is None:
        raise ConfigError(
            "trainer.micro_batch=auto needs trainer.device_memory_gib (the accelerator's "
            "memory, e.g. 80); or give trainer.micro_batch a number"
        )
    shape = shape or model_shape(run.model)
    if shape is None:
        raise ConfigError(
            f"trainer.micro_batch=auto needs the shape of {run.model.name!r}: set model.shape "
            "(its config.json fields) or give trainer.micro_batch a number"
        )
    base = replace(_base_workload(run, kind, processes, sharded), adapters=_adapters(run, shape))
    device = run.trainer.device_memory_gib * GIB
    usable = device * run.trainer.device_usable_fraction
    fixed = sum(_device_overheads(run).values())
    for micro in _cuts(rows):  # the largest cut whose parts, runtime and margin fit
        w = replace(base, micro_batch=micro, accumulation=rows // micro)
        if sum(memory(shape, w, device).values()) + fixed <= usable:
            return micro, rows // micro
    return 1, rows  # nothing fits: the plan reports the stage at micro-batch 1


def _device_bytes(run: RunConfig) -> float | None:
    gib = run.trainer.device_memory_gib
    return gib * GIB if gib else None


def _device_overheads(run: RunConfig) -> dict[str, float]:
    """What a device holds beside the workload (none where the plan checks no device): the
    runtime (``trainer.device_runtime_gib``) and the margin kept free."""
    t = run.trainer
    if not t.device_memory_gib:
        return {}
    return {"runtime": t.device_runtime_gib * GIB, "margin": t.memory_margin_gib * GIB}


def _unknown_shape(run: RunConfig, stage: str, kind: str, processes: int) -> StagePlan:
    return StagePlan(
        stage,
        kind,
        processes,
        device_bytes=_device_bytes(run),
        note=f"shape of {run.model.name!r} unknown: set model.shape",
    )


def plan_training(run: RunConfig, stage: str, kind: str, processes: int, sharded: bool = True) -> StagePlan:
    shape, device = model_shape(run.model), _device_bytes(run)
    if shape is None:
        return _unknown_shape(run, stage, kind, processes)
    micro, accumulation = micro_steps(run, kind, processes, shape, sharded)
    w = replace(
        _base_workload(run, kind, processes, sharded),
        micro_batch=micro,
        accumulation=accumulation,
        adapters=_adapters(run, shape),
    )
    parts = memory(shape, w, device) | _device_overheads(run)
    rows = micro * accumulation * processes
    return StagePlan(
        stage,
        kind,
        processes,
        shape,
        w,
        rows,
        parts,
        step_seconds(run, shape, w, rows, processes, kind, parts),
        device,
    )


def plan_eval(run: RunConfig, stage: str) -> StagePlan:
    shape, device = model_shape(run.model), _device_bytes(run)
    if shape is None:
        return _unknown_shape(run, stage, "eval", 1)
    e = run.eval
    vllm = e.backend == "vllm"
    sequence = run.trainer.plan_prompt_tokens + e.max_new_tokens  # unclamped: an upper bound
    rows = 1 if vllm else e.batch_size  # vLLM: weights and one row; it fills the rest itself
    w = Workload(
        kind="eval",
        processes=1,
        sharded=False,
        weight_bytes=_weight_bytes(run),
        micro_batch=rows,
        accumulation=1,
        sequence=sequence,
        completion=e.max_new_tokens,
        generation="cache",
        generation_rows=rows,
    )
    parts = memory(shape, w, device) | _device_overheads(run)
    note = "vLLM fills the rest with KV cache" if vllm else ""
    if (limit := shape.max_position_embeddings) and sequence > limit:
        note = (
            f"prompt + eval.max_new_tokens = {sequence} tokens > the model's {limit} "
            "positions: rlvr.evaluate clamps new tokens to the positions left after each "
            "benchmark's longest prompt (logged)"
        )
    return StagePlan(
        stage,
        "eval",
        1,
        shape,
        w,
        w.generation_rows,
        parts,
        step_seconds(run, shape, w, w.generation_rows, 1, "eval"),
        device,
        note,
    )


def plan_stage(run: RunConfig, stage: str, kind: str, processes: int, sharded: bool = True) -> StagePlan:
    """The plan of a stage of ``kind`` (host-only stages get an empty row)."""
    usable = run.trainer.device_usable_fraction
    if kind in TRAINING:
        plan = plan_training(run, stage, kind, processes, sharded)
        return replace(plan, usable_fraction=usable)
    if kind == "eval":
        return replace(plan_eval(run, stage), usable_fraction=usable)
    return StagePlan(stage, kind, processes, note="host only (no accelerator)")
