"""Seconds of one optimizer step: the forwards and backwards it trains, and the sampling it waits for.

Assumptions, each an upper bound unless said otherwise:
- training runs at ``trainer.device_tflops x trainer.plan_mfu``; every forward a step runs is
  counted: forward + backward (3 passes), the recompute under gradient checkpointing, the
  reference model (``algo.beta > 0``), the teacher that scores each row (MT-OPD), and the
  old-policy forward TRL 1.16 runs at generation time when ``vllm_importance_sampling_correction``
  is on (or when the accumulation is not a multiple of ``steps_per_generation x num_iterations``;
  here one generation batch is one optimizer step, so only the correction triggers it).
  Generation-time forwards (old policy, reference) run once per generation batch, which serves
  ``algo.num_iterations`` optimizer steps.
- sampling is decoded in waves: a device holds as many rows in flight as its KV memory takes at
  the full sequence length (vLLM colocated: its share of the device less its copy of the
  weights and ``VLLM_OVERHEAD``; a vLLM server: ``VLLM_SERVER_SHARE`` of each server device;
  the in-process KV-cache sampler: every row, as the memory plan counts them). Each decoded
  token of a wave costs the larger of its FLOPs at ``trainer.plan_decode_mfu`` and the bytes it
  reads (the weights once, and every row's KV cache, half the completion on average) at
  ``BANDWIDTH_EFFICIENCY x trainer.device_bandwidth_gbs``: decode at small batch is bound by
  memory bandwidth, not FLOPs.
- completions run to ``trainer.plan_completion_tokens`` (null: ``max_completion_length``, the
  bound); memory is always planned at the maximum length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from rlvr.config import ConfigError, RunConfig
from rlvr.planning import vllm
from rlvr.planning.memory import GIB, Workload, forward_flops_per_token, kv_cache_bytes
from rlvr.planning.shapes import ModelShape

BANDWIDTH_EFFICIENCY = 0.7  # share of the peak memory bandwidth decode kernels reach
VLLM_OVERHEAD = 2 * GIB  # vLLM's activations and CUDA graphs inside its share
VLLM_SERVER_SHARE = 0.9  # trl vllm-serve's default gpu_memory_utilization


def generation_forwards(run: RunConfig, kind: str) -> int:
    """Forwards over each sampled row that run at generation time (not trained through)."""
    if kind in ("sft", "distill", "eval"):
        return 0
    a, t = run.algo, run.trainer
    old_policy = int(t.use_vllm and a.vllm_importance_sampling_correction)
    return old_policy + int(a.beta > 0)


def rows_in_flight(
    run: RunConfig,
    shape: ModelShape,
    w: Workload,
    rows: int,
    parts: Mapping[str, float] | None = None,
) -> int:
    """Rows one generating device decodes at once: vLLM's paged cache holds the tokens rows
    reach (the planned completion length), the in-process sampler every row it samples. A
    colocated engine's KV cache is the one rlvr.planning.vllm plans beside training's parts."""
    sequence = w.sequence - w.completion + _completion(run, w)
    per_row = kv_cache_bytes(shape, 1, sequence, w.weight_bytes)
    device = (run.trainer.device_memory_gib or 0) * GIB
    if w.generation == "vllm" and device and parts and vllm.colocated(run):
        try:
            kv = vllm.engine_plan(run, shape, parts, device, rows, w.sequence).kv_tokens
        except ConfigError:  # the plan reports the engine that cannot fit
            kv = 0
        return max(1, min(rows, kv // sequence))
    if w.generation == "vllm" and device:
        weights = shape.parameters() * w.weight_bytes
        share = w.vllm_share if run.trainer.vllm_mode == "colocate" else VLLM_SERVER_SHARE
        room = share * device - weights - VLLM_OVERHEAD
        return max(1, min(rows, int(room // per_row)))
    return max(1, rows)  # cache sampler: all rows (the memory plan checks they fit)


def _completion(run: RunConfig, w: Workload) -> int:
    """Completion tokens the time estimate assumes (SFT trains its rows at full length)."""
    planned = run.trainer.plan_completion_tokens
    sampled = w.generation != "none" or w.kind == "eval"
    return min(planned, w.completion) if planned and sampled else w.completion


def sampling_seconds(
    run: RunConfig,
    shape: ModelShape,
    w: Workload,
    rows: int,
    parts: Mapping[str, float] | None = None,
) -> float:
    """Seconds one generating device takes to sample its ``rows`` (waves of rows in flight)."""
    t = run.trainer
    assert t.device_tflops
    peak = t.device_tflops * 1e12
    completion = _completion(run, w)
    prompt = w.sequence - w.completion
    fwd = forward_flops_per_token(shape, prompt + completion)
    flight = rows_in_flight(run, shape, w, rows, parts)
    waves = math.ceil(rows / flight)
    prefill = flight * prompt * fwd / (peak * t.plan_mfu)
    compute = flight * fwd / (peak * t.plan_decode_mfu)
    per_token = compute
    if t.device_bandwidth_gbs:
        kv = kv_cache_bytes(shape, flight, prompt + completion // 2, w.weight_bytes)
        read = shape.parameters() * w.weight_bytes + kv
        per_token = max(compute, read / (t.device_bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY))
    return waves * (prefill + completion * per_token)


def step_seconds(
    run: RunConfig,
    shape: ModelShape,
    w: Workload,
    rows: int,
    processes: int,
    kind: str,
    parts: Mapping[str, float] | None = None,
) -> float | None:
    """Wall seconds of one optimizer step (training stages) or one batch (evaluation);
    ``parts``: the stage's planned bytes per device (they size a colocated engine)."""
    t = run.trainer
    if not t.device_tflops:
        return None
    peak = processes * t.device_tflops * 1e12
    sequence = w.sequence - w.completion + _completion(run, w)
    fwd = forward_flops_per_token(shape, sequence)
    if w.kind == "eval":
        return sampling_seconds(run, shape, w, rows)
    passes = 3 + int(w.checkpointing) + int(w.teachers > 0)  # the reference: generation_forwards
    iterations = max(1, run.algo.num_iterations) if kind not in ("sft", "distill") else 1
    extra = generation_forwards(run, kind) / iterations
    train = rows * sequence * fwd * (passes + extra) / (peak * t.plan_mfu)
    if w.generation == "none":
        return train
    generating = processes
    if w.generation == "vllm" and t.vllm_mode == "server":
        generating = max(1, t.vllm_server_devices)
    per_device = math.ceil(rows / generating)
    return train + sampling_seconds(run, shape, w, per_device, parts) / iterations
