"""vLLM on a training device: the colocated engine's share, its KV capacity, and its servers.

TRL's colocated engine (``trainer.vllm_mode=colocate``) reserves ``vllm_gpu_memory_utilization``
of the device for its weights, its profiled activations and the KV cache. With
``trainer.vllm_enable_sleep_mode=true`` TRL puts it to sleep at level 2 after every generation
(trl/generation/vllm_generation.py): level 2 frees the engine's weights and its KV cache (the
weights are pushed again from the policy on waking), so the training forward/backward only
shares the device with what the engine keeps outside that budget (CUDA graphs, NCCL and cuBLAS
workspaces: ``OUTSIDE_BYTES``). Generation then shares it with what training keeps between
steps (weights, gradients, optimizer state, teachers, the runtime), never with activations or
logits. ``trainer.vllm_gpu_memory_utilization=auto`` gives the engine what those leave, less a
headroom; a number is checked against the same bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rlvr.config import ConfigError, RunConfig
from rlvr.planning.memory import GIB
from rlvr.planning.shapes import ModelShape

# Held by a colocated engine outside its utilization budget, awake or at sleep level 2: CUDA
# graphs (captured after the KV cache is sized), NCCL/cuBLAS workspaces. Errs high (about 1-2
# GiB measured for 4B models in vLLM's own reports).
OUTSIDE_BYTES = 3 * GIB
HEADROOM = 0.05  # of the device, left free by utilization=auto (fragmentation, allocator caches)
MAX_UTILIZATION = 0.9  # vLLM's own default: the most auto gives
SCHEDULED_TOKENS = 4096  # TRL's max_num_batched_tokens for the colocated engine
# What training holds only inside a forward/backward: gone while the engine generates.
TRANSIENT = ("activations", "attention mask", "logits", "fsdp gather", "kv cache", "vllm")
SERVER_PORT = 8000  # trl vllm-serve's default port (the policy's server)
TEACHER_PORT = 8101  # the first teacher server's port; one port per domain after it


def colocated(run: RunConfig) -> bool:
    return bool(run.trainer.use_vllm) and run.trainer.vllm_mode == "colocate"


def is_auto(run: RunConfig) -> bool:
    return str(run.trainer.vllm_gpu_memory_utilization) == "auto"


def training_share(run: RunConfig) -> float:
    """The share of the device a colocated engine holds during the training forward/backward
    (the memory model's ``vllm`` part): what it keeps outside its budget, plus the budget itself
    unless it sleeps. 0 without a colocated engine or a device size."""
    device = run.trainer.device_memory_gib
    if not colocated(run) or not device:
        return 0.0
    outside = OUTSIDE_BYTES / (device * GIB)
    if run.trainer.vllm_enable_sleep_mode:
        return outside
    if is_auto(run):
        raise ConfigError(
            "trainer.vllm_gpu_memory_utilization=auto sizes the engine beside what training "
            "keeps between steps, which needs trainer.vllm_enable_sleep_mode=true (the engine "
            "frees its weights and KV cache while training runs); or give a number"
        )
    return outside + float(run.trainer.vllm_gpu_memory_utilization)


def resident_bytes(parts: Mapping[str, float]) -> float:
    """What training keeps on the device between steps: every planned part but the transient."""
    return sum(v for k, v in parts.items() if k not in TRANSIENT)


@dataclass(frozen=True)
class EnginePlan:
    """A colocated engine on one device, as planned."""

    utilization: float
    auto: bool
    sleep: bool
    engine_bytes: float  # utilization x device
    kv_bytes: float
    kv_tokens: int
    sequence: int  # prompt + completion tokens of a row at its longest
    rows: int  # rows the device samples per step (TRL's max_num_seqs)
    generation_peak: float  # training's resident bytes + the awake engine

    @property
    def in_flight(self) -> float:
        """Completions of the longest length the KV cache holds at once."""
        return self.kv_tokens / self.sequence

    def describe(self) -> str:
        how = "auto" if self.auto else "set"
        sleep = "sleep level 2 while training" if self.sleep else "no sleep mode"
        bound = "KV-bound" if self.in_flight < self.rows else "all rows at once"
        return (
            f"vllm {self.utilization:.2f} of the device ({how}, {sleep}): "
            f"{self.engine_bytes / GIB:.1f} GiB, KV cache {self.kv_bytes / GIB:.1f} GiB = "
            f"{self.kv_tokens:,} tokens = {self.in_flight:.1f} completions of "
            f"{self.sequence:,} tokens in flight per GPU of {self.rows} to sample ({bound}); "
            f"generation peak {self.generation_peak / GIB:.1f} GiB"
        )


def kv_token_bytes(shape: ModelShape, weight_bytes: int) -> int:
    return shape.num_hidden_layers * 2 * shape.kv_dim * weight_bytes


def profile_bytes(shape: ModelShape, rows: int, weight_bytes: int) -> int:
    """vLLM's profiled activation peak: one scheduled batch through a layer, and the sampler's
    float32 logits and probabilities of every sequence it may hold."""
    layer = SCHEDULED_TOKENS * (2 * shape.intermediate_size + 4 * shape.hidden_size)
    return layer * weight_bytes + rows * shape.vocab_size * 4 * 2


def engine_plan(
    run: RunConfig,
    shape: ModelShape,
    parts: Mapping[str, float],
    device_bytes: float,
    rows: int,
    sequence: int,
) -> EnginePlan:
    """The colocated engine of a training stage planned at ``parts`` (bytes per device) with
    ``rows`` to sample per device per step of ``sequence`` tokens at most. Raises when the
    engine and what training keeps between steps cannot share the device."""
    t, resident = run.trainer, resident_bytes(parts)
    free = device_bytes - resident - OUTSIDE_BYTES
    if is_auto(run):  # the plan's own safety margin, when it keeps one, counts toward HEADROOM
        headroom = max(0.0, HEADROOM * device_bytes - parts.get("margin", 0.0))
        share = (free - headroom) / device_bytes
        utilization = min(MAX_UTILIZATION, math.floor(share * 100) / 100)
    else:
        utilization = float(t.vllm_gpu_memory_utilization)
    weight_bytes = 2 if t.bf16 or run.model.dtype in ("bfloat16", "float16") else 4
    engine = utilization * device_bytes
    kv = engine - shape.parameters() * weight_bytes - profile_bytes(shape, rows, weight_bytes)
    plan = EnginePlan(
        utilization,
        is_auto(run),
        bool(t.vllm_enable_sleep_mode),
        engine,
        max(kv, 0.0),
        int(max(kv, 0.0) // kv_token_bytes(shape, weight_bytes)),
        sequence,
        rows,
        resident + OUTSIDE_BYTES + engine,
    )
    if kv <= 0 or plan.kv_tokens < sequence:
        raise ConfigError(
            f"vLLM at trainer.vllm_gpu_memory_utilization={utilization:.2f} holds "
            f"{plan.kv_tokens:,} KV tokens per device, less than one {sequence:,}-token "
            "completion: raise it, set it to auto with trainer.vllm_enable_sleep_mode=true, or "
            "spread the model over more processes (FSDP)"
        )
    if plan.generation_peak > device_bytes:
        raise ConfigError(
            f"vLLM at trainer.vllm_gpu_memory_utilization={utilization:.2f} "
            f"({engine / GIB:.1f} GiB) and what training keeps between steps "
            f"({resident / GIB:.1f} GiB) need {plan.generation_peak / GIB:.1f} GiB of "
            f"{device_bytes / GIB:g}: set trainer.vllm_gpu_memory_utilization=auto"
        )
    return plan


def resolved_utilization(run: RunConfig, parts: Mapping[str, float] | None, **plan) -> float:
    """The number TRL gets: the configured one, or auto's from the stage's planned ``parts``
    (``engine_plan``'s keywords: shape, device_bytes, rows, sequence)."""
    if not (colocated(run) and is_auto(run)):
        value = run.trainer.vllm_gpu_memory_utilization
        return 0.3 if is_auto(run) else float(value)  # auto without an engine: unused
    if parts is None or not plan.get("device_bytes") or plan.get("shape") is None:
        raise ConfigError(
            "trainer.vllm_gpu_memory_utilization=auto needs the stage's plan: set "
            "trainer.device_memory_gib and a known model shape (model.shape), or give a number"
        )
    return engine_plan(run, parts=parts, **plan).utilization


def serve_command(model: str, port: int, gpus: str, tensor_parallel: int = 1) -> str:
    """The ``trl vllm-serve`` line that starts a server for ``model`` on ``gpus`` (TRL 1.16 adds
    ``--logprobs-mode processed_logprobs --max-logprobs -1``, which teacher scoring needs)."""
    return (
        f"CUDA_VISIBLE_DEVICES={gpus} trl vllm-serve --model {model} --port {port} "
        f"--tensor_parallel_size {tensor_parallel}"
    )


def server_split(rows: int, processes: int, server_devices: int) -> str | None:
    """Why a one-node GRPO stage with a vLLM server on ``server_devices`` of its ``processes``
    GPUs cannot split its ``rows`` per step over the others (TRL's generation batch is
    per-device batch x processes x steps, so the rows must divide), or None when they do."""
    trainers = processes - server_devices
    if trainers >= 1 and rows % trainers == 0:
        return None
    fits = [k for k in range(1, processes) if rows % (processes - k) == 0]
    return (
        f"{rows} completions per step do not split over the {trainers} GPUs a "
        f"{server_devices}-GPU vLLM server leaves of {processes}: set "
        f"trainer.vllm_server_devices to one of {fits} (and an accelerate config of "
        f"{processes} - that many processes), or change algo.prompts_per_step"
    )
