"""Bytes per device and FLOPs per step of one stage's workload, counted from the model shape.

The counts follow what the runtime holds (docs/resource-plan.md, "Memory"): trainable
parameters, their gradients and AdamW's two moments at the width they are stored in (float32
masters under FSDP2 with bf16 mixed precision, 16 bytes a parameter; the loaded dtype without
mixed precision), sharded over the ranks under FSDP and whole on each rank otherwise, with
DDP's gradient buckets and autocast's low-precision weight copies where those exist; the units
FSDP gathers at the compute width (two decoder layers and their unsharded gradients, and the
root unit, embedding + final norm + LM head, held gathered for the whole step); activations of
the micro-batch (every layer's inputs with gradient checkpointing plus the recomputed layer's
tensors and their gradients, every saved tensor without); the 4D mask sdpa and eager attention
build for padded rows (a boolean B x 1 x S x S, and its compute-width copy each attention call
saves for backward); logits (TRL's fused LM head projects 4,096 tokens x 32,768 vocabulary
columns at a time, in GRPO, SFT and MT-OPD's sampled-token loss; the full-vocabulary
divergence keeps the whole completion x vocabulary); the KV cache of the rows sampled at once,
or vLLM's colocated share; a reference model; distillation teachers (sharded like the student
under FSDP).
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
# Short-lived temporaries the per-tensor counts miss (the fused head's casts and its loss, the
# mask's conversions), as a share of the logits and attention-mask bytes: without it the
# calibration measured up to 8% more than planned (scripts/calibrate_plan.py). Activations need
# none: counting a layer's tensors with their gradients already errs high.
TEMPORARY_SHARE = 0.3
# Under autocast (one process, weights wider than the compute width) part of what a layer saves
# for backward stays float32: the ops autocast runs in float32 (norms, softmax), and on CPUs
# without native bf16 matmuls their float32 fallback. A quarter covers an AMD EPYC without AMX
# (the padded autocast case measured 3.5% over a plan that counted every activation at bf16).
AUTOCAST_FP32_SHARE = 0.25


@dataclass(frozen=True)
class Workload:
    """What one device holds and computes in a stage (``rows`` are sequences)."""

    kind: str  # train | eval
    processes: int
    sharded: bool  # FSDP: weights, gradients and optimizer state split over the processes
    weight_bytes: int  # compute width: 2 (bf16/fp16) or 4 (fp32); activations, gathered units
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
    master_bytes: int = 0  # trainable weights, gradients, AdamW moments (0: weight_bytes)
    frozen_bytes: int = 0  # frozen weights as loaded: LoRA's base, reference, teachers (0: same)
    adapters: int = 0  # LoRA: the trainable adapter parameters (the base is frozen); 0: full
    attention_mask: bool = False  # sdpa/eager: a B x 1 x S x S mask for padded rows


def master_width(w: Workload) -> int:
    return w.master_bytes or w.weight_bytes


def frozen_width(w: Workload) -> int:
    return w.frozen_bytes or w.weight_bytes


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
    if w.checkpointing:  # each layer's input kept; the recomputed layer's tensors and their
        # gradients live during its backward
        stored = shape.num_hidden_layers * shape.hidden_size + 2 * per_token_layer
    else:
        stored = shape.num_hidden_layers * per_token_layer
    width: float = w.weight_bytes
    if not w.sharded and master_width(w) > w.weight_bytes:  # autocast
        width += AUTOCAST_FP32_SHARE * (4 - w.weight_bytes)
    return int(tokens * stored * width)


def logits_bytes(shape: ModelShape, w: Workload) -> int:
    if w.logits == "fused":  # tiles of at most FUSED_HEAD_TOKENS tokens: the projection at the
        # compute width (bf16 under autocast or FSDP2's param_dtype), its temporaries in float32
        tokens = min(w.micro_batch * w.sequence, FUSED_HEAD_TOKENS)
        columns = min(shape.vocab_size, FUSED_HEAD_VOCAB)
        tile = FUSED_HEAD_VOCAB * w.weight_bytes
        return tokens * (tile + FUSED_HEAD_TEMPORARIES * columns * 4)
    # whole: the student's logits, their float32 log-softmax and its gradient; teachers' too
    rows = w.micro_batch * w.completion * shape.vocab_size
    student = rows * (w.weight_bytes + 4 + 4)
    teacher = rows * (w.weight_bytes + 4) if w.teachers else 0
    return student + teacher


def kv_cache_bytes(shape: ModelShape, rows: int, sequence: int, weight_bytes: int) -> int:
    return rows * sequence * shape.num_hidden_layers * 2 * shape.kv_dim * weight_bytes


def attention_mask_bytes(shape: ModelShape, w: Workload) -> int:
    """sdpa and eager attention on padded rows: transformers builds one boolean B x 1 x S x S
    mask per forward, and each attention call converts it to the compute width and saves that
    copy for backward (every layer's without checkpointing, the recomputed layer's with it)."""
    if not w.attention_mask:
        return 0
    square = w.micro_batch * w.sequence * w.sequence
    saved = 1 if w.checkpointing else shape.num_hidden_layers
    return square * (1 + saved * w.weight_bytes)


def root_parameters(shape: ModelShape) -> int:
    """FSDP's root unit as Accelerate carves it: embedding, final norm and LM head (tied or not)."""
    tables = 1 if shape.tie_word_embeddings else 2
    return tables * shape.vocab_size * shape.hidden_size + shape.hidden_size


def _states(shape: ModelShape, w: Workload) -> dict[str, float]:
    """Weights, gradients, optimizer state and the copies the parallelism keeps."""
    params = shape.parameters()
    trainable = w.adapters or params
    frozen = params if w.adapters else 0
    master, shards = master_width(w), (w.processes if w.sharded else 1)
    parts: dict[str, float] = {"weights": (trainable * master + frozen * frozen_width(w)) / shards}
    if w.kind != "train":
        return parts
    parts["gradients"] = trainable * master / shards
    parts["optimizer"] = 2 * trainable * master / shards  # AdamW: two moments, the master's dtype
    wide = (trainable if master > w.weight_bytes else 0) + (frozen if frozen_width(w) > w.weight_bytes else 0)
    if w.sharded and w.processes > 1:
        # two layers gathered (the one computing, the next prefetched), the unsharded gradients
        # of the layer in backward and of the one being reduce-scattered; the root unit stays
        # gathered from the first forward to the end of backward, with its unsharded gradients
        parts["fsdp gather"] = 4 * shape.layer_parameters() * w.weight_bytes
        root_grads = 0 if w.adapters else 1
        parts["root unit"] = (1 + root_grads) * root_parameters(shape) * w.weight_bytes
    elif wide:  # autocast keeps a compute-width copy of each wider weight for the forward
        parts["autocast copies"] = wide * w.weight_bytes
    if not w.sharded and w.processes > 1:  # DDP's gradient buckets (not views of the gradients)
        parts["ddp buckets"] = trainable * master
    return parts


def memory(shape: ModelShape, w: Workload, device_bytes: float | None) -> dict[str, float]:
    """Bytes per device by component, in the order the plan prints them."""
    parts = _states(shape, w)
    shards = w.processes if w.sharded else 1
    frozen = shape.parameters() * frozen_width(w) / shards
    if w.kind == "train":
        parts["activations"] = activation_bytes(shape, w)
        if mask := attention_mask_bytes(shape, w):
            parts["attention mask"] = mask
        parts["logits"] = logits_bytes(shape, w)
        parts["temporaries"] = TEMPORARY_SHARE * (parts.get("attention mask", 0) + parts["logits"])
    if w.reference:
        parts["reference"] = frozen
    if w.teachers:  # sharded like the student under FSDP (rlvr.distillation.teachers)
        parts["teachers"] = w.teachers * frozen
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
