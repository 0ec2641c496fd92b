"""Each stage's time against its SLURM budget, and the study's GPU-hours beside a paper's.

A stage's estimate is its steps x the plan's step time, plus ``trainer.plan_overhead_min`` in
each job it runs in (loading the model and vLLM, saving, resuming). Its budget is SLURM's time
limit x (1 + requeues): submitit requeues a job that times out ``slurm_max_num_timeout`` times,
and training resumes from its newest checkpoint. Each requeue loses the work since that
checkpoint (``lost_minutes``). A stage fits when its steps x ``MARGIN`` fit in the jobs it may
run, each less its overhead and lost work.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import ConfigError, RunConfig

MARGIN = 1.25  # the estimate is a bound at the planned lengths; the budget keeps 25% over it
DDP_TIMEOUT_FLOOR_S = 1800  # transformers' default ddp_timeout
SAVE_MIN = 5  # minutes to write a sharded checkpoint (weights, optimizer, RNG)
DDP_TIMEOUT_STEPS = 2  # a collective may wait for a whole step's generation and grading


@dataclass(frozen=True)
class StageBudget:
    stage: str
    kind: str
    gpus: int  # GPUs the stage holds (nodes x GPUs per node)
    nodes: int
    steps: int
    step_seconds: float
    timeout_min: float
    requeues: int
    overhead_min: float
    lost_min: float  # minutes of each job lost to its requeue (lost_minutes)
    signal_s: float = 0.0  # slurm_signal_delay_s: SLURM's warning before the limit

    @property
    def signal_covers_a_step(self) -> bool:
        """Whether a step and its save fit between SLURM's warning and the limit: otherwise
        the limit falls mid-step and the job ends in TIMEOUT, not requeued
        (rlvr.training.checkpoint_signals)."""
        return self.signal_s / 60 >= self.step_seconds / 60 + SAVE_MIN

    @property
    def hours(self) -> float:
        return (self.steps * self.step_seconds / 60 + self.overhead_min) / 60

    @property
    def jobs_needed(self) -> int:
        """Jobs (first run + requeues) the stage needs, each losing overhead and lost work."""
        usable = self.timeout_min - self.overhead_min - self.lost_min
        if usable <= 0:
            return 10**6
        return math.ceil(self.steps * self.step_seconds / 60 * MARGIN / usable)

    @property
    def budget_hours(self) -> float:
        return self.timeout_min * (1 + self.requeues) / 60

    @property
    def fits(self) -> bool:
        one_job = self.jobs_needed == 1
        return self.jobs_needed <= 1 + self.requeues and (one_job or self.signal_covers_a_step)

    def problem(self) -> str:
        t = self.timeout_min / 60
        need = self.jobs_needed - 1
        signal = ""
        if need and not self.signal_covers_a_step:
            delay = math.ceil((self.step_seconds / 60 + SAVE_MIN) * 60 * MARGIN)
            signal = (
                f"; and study.slurm_by_kind.{self.kind}.slurm_signal_delay_s>={delay} (now "
                f"{self.signal_s:g}): a "
                "step and its save must fit between SLURM's warning and the limit, or the job "
                "ends in TIMEOUT without a requeue"
            )
        return (
            f"stage {self.stage} needs ~{self.hours:.0f} h on {self.nodes} node(s) of "
            f"{self.gpus // max(self.nodes, 1)} GPUs ({self.steps} steps x "
            f"{self.step_seconds / 60:.1f} min), its budget is {t:g} h x (1 + "
            f"{self.requeues}) = {self.budget_hours:.0f} h (with {MARGIN:g}x margin, "
            f"{self.overhead_min:g} min of loading and {self.lost_min:.0f} min of lost work per "
            f"job): set study.slurm.slurm_max_num_timeout={need} (requeues, with signal "
            "checkpoints), a longer study.slurm.timeout_min, more nodes "
            f"(study.accelerate=<a multi-node config>), or fewer steps{signal}"
        )


def lost_minutes(run: RunConfig, step_seconds: float, signal_delay_s: float) -> float:
    """Minutes of a job a requeue loses. SLURM signals ``signal_delay_s`` before the limit and
    the stage checkpoints at the end of the step it is in (rlvr.training.checkpoint_signals):
    when a step and its save fit in that delay, the job loses at most the delay; otherwise
    the work since the newest periodic (``save_steps``) or timed (``save_every_min``, taken
    at a step's end) checkpoint."""
    t, step = run.trainer, step_seconds / 60
    if signal_delay_s / 60 >= step + SAVE_MIN:  # the job stops at the warning, saved
        return signal_delay_s / 60
    by_steps = t.save_steps * step if t.save_steps > 0 else math.inf
    by_clock = max(t.save_every_min, step) if t.save_every_min > 0 else math.inf
    return float(min(by_steps, by_clock) + SAVE_MIN)


def check_budgets(budgets: Sequence[StageBudget]) -> None:
    """Fail, naming the fix, when a stage cannot finish inside its SLURM budget."""
    problems = [b.problem() for b in budgets if not b.fits]
    if problems:
        raise ConfigError("stages over their SLURM budget:\n  " + "\n  ".join(problems))


def format_budgets(budgets: Sequence[StageBudget]) -> str:
    lines = [f"time against the SLURM budget (estimate x {MARGIN:g} <= limit x (1 + requeues))"]
    for b in budgets:
        verdict = "fits" if b.fits else "OVER BUDGET"
        lines.append(
            f"  {b.stage:<26} {b.hours:8.1f} h on {b.gpus} GPU(s)  budget "
            f"{b.timeout_min / 60:g} h x (1 + {b.requeues}) = {b.budget_hours:.0f} h, "
            f"{b.jobs_needed} job(s)  {verdict}"
        )
    return "\n".join(lines)


def paper_compute(path: Path) -> dict[str, tuple[int, float]]:
    """run -> (steps, GPU-hours) of a paper's compute table (``run,steps,gpu_hours``)."""
    if not path.is_file():
        return {}
    with path.open() as fh:
        return {r["run"]: (int(r["steps"]), float(r["gpu_hours"])) for r in csv.DictReader(fh)}


def arm_of(stage: str, kind: str) -> str | None:
    """The paper's run name of a training stage (expert-math-seed0 -> math)."""
    if kind == "expert":
        return stage.split("-")[1]
    return {"mixed": "mixed", "distill": "mt_opd"}.get(kind)


def format_gpu_hours(budgets: Sequence[StageBudget], paper: Mapping[str, tuple[int, float]]) -> str:
    """GPU-hours per arm beside the paper's, and mixed / separate experts beside its ratio."""
    ours: dict[str, float] = {}
    for b in budgets:
        if (arm := arm_of(b.stage, b.kind)) is not None:
            ours[arm] = ours.get(arm, 0.0) + b.hours * b.gpus
    if not ours:
        return ""
    lines = ["GPU-hours per arm (this plan | the paper's compute table)"]
    for arm, hours in ours.items():
        theirs = f"{paper[arm][1]:,.0f}" if arm in paper else "-"
        lines.append(f"  {arm:<12} {hours:10,.0f} | {theirs}")
    experts = [a for a in ours if a not in ("mixed", "mt_opd")]
    shared = [a for a in experts if a in paper]  # the paper's ratio is over its own experts
    if "mixed" in ours and shared:
        mine = ours["mixed"] / sum(ours[a] for a in shared)
        line = f"  mixed / separate experts ({', '.join(shared)}): {mine:.1%}"
        if "mixed" in paper:
            line += f" | {paper['mixed'][1] / sum(paper[a][1] for a in shared):.1%}"
        lines.append(line)
    return "\n".join(lines)


def ddp_timeout(step_seconds: float | None) -> int:
    """TRL's ``ddp_timeout``: ``DDP_TIMEOUT_STEPS`` planned steps, never below the default."""
    if not step_seconds:
        return DDP_TIMEOUT_FLOOR_S
    return max(DDP_TIMEOUT_FLOOR_S, math.ceil(DDP_TIMEOUT_STEPS * step_seconds))
