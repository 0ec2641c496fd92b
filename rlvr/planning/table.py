"""The resource plan as text: one row per stage, and the check that every stage fits."""

from __future__ import annotations

from collections.abc import Sequence

from rlvr.config import ConfigError, TrainerConfig
from rlvr.planning.memory import GIB
from rlvr.planning.stage_plan import StagePlan

SHORT = {
    "weights": "w",
    "gradients": "grad",
    "optimizer": "opt",
    "fsdp gather": "gather",
    "activations": "act",
    "logits": "logits",
    "reference": "ref",
    "teachers": "teach",
    "kv cache": "kv",
    "vllm": "vllm",
    "runtime": "rt",
}


def size(n: float) -> str:
    """Bytes as GiB (MiB below one GiB), three significant figures."""
    if n >= GIB:
        return f"{n / GIB:.3g} GiB"
    return f"{n / 2**20:.3g} MiB"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.3g} s"
    return f"{seconds / 60:.3g} min" if seconds < 7200 else f"{seconds / 3600:.3g} h"


def _label(stages: Sequence[str]) -> str:
    if len(stages) <= 2:
        return ", ".join(stages)
    return f"{stages[0]} ... {stages[-1]} ({len(stages)} stages)"


def plan_row(p: StagePlan, label: str) -> str:
    if p.workload is None:
        return f"{label}\n    {p.note}"
    w = p.workload
    device = f" of {p.device_bytes / GIB:g} GiB" if p.device_bytes else ""
    verdict = "" if p.device_bytes is None else ("  fits" if p.fits else "  DOES NOT FIT")
    per = "batch" if p.kind == "eval" else "step"
    parts = ", ".join(f"{SHORT.get(k, k)} {size(v)}" for k, v in p.parts.items() if v)
    return "\n".join(
        [
            label,
            f"    {p.processes} device(s); {w.micro_batch} rows x {w.accumulation} per {per} of "
            f"{w.sequence} tokens ({p.tokens_per_step:,} tokens/{per}); {per} "
            f"{duration(p.step_seconds)}",
            f"    {size(p.total)} per device{device}{verdict}: {parts}",
            *([f"    note: {p.note}"] if p.note else []),
        ]
    )


def format_plan(plans: Sequence[StagePlan], assumptions: str = "") -> str:
    """The table a dry run prints: per stage (stages with the same plan together), devices,
    micro-batch x accumulation, tokens per step, memory per device with its parts, whether it
    fits, and the estimated step time."""
    groups: dict[tuple, list[StagePlan]] = {}
    for p in plans:
        key = (p.kind, p.processes, p.workload, tuple(p.parts.items()), p.note, p.step_seconds)
        groups.setdefault(key, []).append(p)
    lines = ["resource plan"]
    if assumptions:
        lines.append(f"  {assumptions}")
    for members in groups.values():
        lines.append(plan_row(members[0], _label([m.stage for m in members])))
    legend = ", ".join(f"{v}={k}" for k, v in SHORT.items())
    lines.append(f"  parts: {legend}")
    return "\n".join(lines)


def assumptions(t: TrainerConfig) -> str:
    """The plan's stated assumptions (the ``trainer`` settings it reads), above its table."""
    device = f"{t.device_memory_gib:g} GiB" if t.device_memory_gib else "memory not checked"
    speed = (
        f"{t.device_tflops:g} TFLOPS at {t.plan_mfu:.0%} MFU training, {t.plan_decode_mfu:.0%} sampling"
        if t.device_tflops
        else "no step time (trainer.device_tflops unset)"
    )
    if t.device_tflops and t.device_bandwidth_gbs:
        speed += f" or {t.device_bandwidth_gbs:g} GB/s for the weights and KV cache per token"
    completions = (
        f"completions of {t.plan_completion_tokens} tokens for time "
        "(trainer.plan_completion_tokens), their maximum for memory"
        if t.plan_completion_tokens
        else "completions at their maximum length"
    )
    return (
        f"devices: {device}, {speed}; prompts of {t.plan_prompt_tokens} tokens "
        f"(trainer.plan_prompt_tokens), {completions}"
    )


def check_fits(plans: Sequence[StagePlan]) -> None:
    """Fail, naming the setting to change, when a stage cannot fit its declared device memory."""
    problems = [p.problem() for p in plans if not p.fits]
    if problems:
        raise ConfigError("the resource plan does not fit:\n  " + "\n  ".join(problems))
