"""Bytes per device and FLOPs per step of one stage's workload, counted from the model shape.

The counts follow what the trainers hold: weights, gradients and AdamW's two moments in the
weights' dtype (sharded over the ranks under FSDP, whole on each rank otherwise, plus the
layer FSDP gathers for its forward); activations of the micro-batch (every layer's inputs with
gradient checkpointing, every saved tensor without); logits (TRL's fused LM head projects
4,096 tokens x 32,768 vocabulary columns at a time, in GRPO, SFT and MT-OPD's sampled-token
loss; the full-vocabulary divergence keeps the whole completion x vocabulary); the KV cache of
the rows sampled at once, or vLLM's colocated share; a reference model; distillation teachers
(sharded like the student under FSDP).
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.planning.shapes import ModelShape

GIB = 1024**3
FUSED_HEAD_TOKENS = 4096  # TRL's fused LM head: tokens per projection tile
FUSED_HEAD_VOCAB = 32768  # ... and vocabulary columns per tile
# The fused head's buffer is FUSED_HEAD_VOCAB wide whatever the vocabulary; its backward (torch
# path) holds about four temporaries of tokens x min(vocabulary, FUSED_HEAD_VOCAB) floats
# (scripts/calibrate_plan.py: SmolLM2's 49,152-token vocabulary at 1,024-2,048 tokens).
FUSED_HEAD_TEMPORARIES = 4
# Elements a decoder layer saves for backward per token, in units of its widths: the two norm
# inputs and outputs (4h), q before and after rotary plus the attention output (3q), k and v
# before and after rotary (4kv), gate, up, the activation and its product with up (4i).
SAVED_PER_TOKEN = {"hidden": 4, "q": 3, "kv": 4, "intermediate": 4}
# Attention by PyTorch's math kernel keeps the scores, masked scores and softmax of every head
# (3 x heads x sequence per token); flash and memory-efficient kernels (accelerators, and
# PyTorch's CPU flash kernel, which scripts/calibrate_plan.py measures) keep O(1).
MATH_ATTENTION_SAVED = 3


@dataclass(frozen=True)
class Workload:
    """What one device holds and computes in a stage (``rows`` are sequences)."""

    kind: str  # train | eval
    processes: int
    sharded: bool  # FSDP: weights, gradients and optimizer state split over the processes
    weight_bytes: int  # 2 (bf16/fp16) or 4 (fp32)
    micro_batch: int  # rows per forward/backward
    accumulation: int  # micro-batches per optimizer step
    sequence: int  # prompt + completion tokens of a row
    completion: int  # completion tokens of a row
    checkpointing: bool = False
    logits: str = "fused"  # fused (TRL's tiled LM head) | whole (completion x vocabulary)
    generation: str = "none"  # none | cache (KV-cache sampling in the process) | vllm
    generation_rows: int = 0  # rows one device samples at once
    vllm_share: float = 0.0  # share of device memory vLLM reserves when colocated
    reference: bool = False
    teachers: int = 0  # full teacher copies on every device (distillation, teacher_device=train)
    attention: str = "flash"  # flash (accelerators) | math (CPU: scores kept, O(sequence))


def activation_bytes(shape: ModelShape, w: Workload) -> int:
    s = SAVED_PER_TOKEN
    per_token_layer = (
        s["hidden"] * shape.hidden_size
        + s["q"] * shape.q_dim
        + s["kv"] * shape.kv_dim
        + s["intermediate"] * shape.intermediate_size
    )
    if w.attention == "math":
        per_token_layer += MATH_ATTENTION_SAVED * shape.num_attention_heads * w.sequence
    tokens = w.micro_batch * w.sequence
    if w.checkpointing:  # each layer's input kept; one layer's tensors live during its recompute
        stored = shape.num_hidden_layers * shape.hidden_size + per_token_layer
    else:
        stored = shape.num_hidden_layers * per_token_layer
    return tokens * stored * w.weight_bytes


def logits_bytes(shape: ModelShape, w: Workload) -> int:
    if w.logits == "fused":  # float32 tiles of at most FUSED_HEAD_TOKENS tokens
        tokens = min(w.micro_batch * w.sequence, FUSED_HEAD_TOKENS)
        columns = min(shape.vocab_size, FUSED_HEAD_VOCAB)
        return tokens * (FUSED_HEAD_VOCAB + FUSED_HEAD_TEMPORARIES * columns) * 4
    # whole: the student's logits, their float32 log-softmax and its gradient; teachers' too
    rows = w.micro_batch * w.completion * shape.vocab_size
    student = rows * (w.weight_bytes + 4 + 4)
    teacher = rows * (w.weight_bytes + 4) if w.teachers else 0
    return student + teacher


def kv_cache_bytes(shape: ModelShape, rows: int, sequence: int, weight_bytes: int) -> int:
    return rows * sequence * shape.num_hidden_layers * 2 * shape.kv_dim * weight_bytes


def memory(shape: ModelShape, w: Workload, device_bytes: float | None) -> dict[str, float]:
    """Bytes per device by component, in the order the plan prints them."""
    params = shape.parameters()
    shards = w.processes if w.sharded else 1
    weights = params * w.weight_bytes
    parts: dict[str, float] = {"weights": weights / shards}
    if w.kind == "train":
        parts["gradients"] = weights / shards
        parts["optimizer"] = 2 * weights / shards
        if w.sharded and w.processes > 1:  # the gathered layer (and the next, prefetched)
            parts["fsdp gather"] = 2 * shape.layer_parameters() * w.weight_bytes
        parts["activations"] = activation_bytes(shape, w)
        parts["logits"] = logits_bytes(shape, w)
    if w.reference:
        parts["reference"] = weights / shards
    if w.teachers:  # sharded like the student under FSDP (rlvr.distillation.teachers)
        parts["teachers"] = w.teachers * weights / shards
    if w.generation == "cache":
        parts["kv cache"] = kv_cache_bytes(shape, w.generation_rows, w.sequence, w.weight_bytes)
    elif w.generation == "vllm" and device_bytes:
        parts["vllm"] = w.vllm_share * device_bytes
    return parts


def forward_flops_per_token(shape: ModelShape, sequence: int) -> float:
    """Matrix FLOPs of one token's forward: 2 x parameters, plus causal attention over half the
    sequence on average (scores and values, 2 x 2 FLOPs per q element and key)."""
    attention = 2 * shape.num_hidden_layers * sequence * shape.q_dim
    return 2 * shape.parameters() + attention


def step_flops(shape: ModelShape, w: Workload, rows_per_step: int) -> tuple[float, float]:
    """(training FLOPs, sampling FLOPs) of one optimizer step over every device."""
    fwd = forward_flops_per_token(shape, w.sequence)
    if w.kind == "eval":
        return 0.0, rows_per_step * w.completion * fwd
    # forward + backward (3), the recompute under checkpointing, the reference model's forward,
    # and the one teacher that scores each row (its domain's)
    passes = 3 + int(w.checkpointing) + int(w.reference) + int(w.teachers > 0)
    train = rows_per_step * w.sequence * fwd * passes
    sampled = rows_per_step * w.completion * fwd if w.generation != "none" else 0.0
    return train, sampled
