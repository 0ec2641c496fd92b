"""Run folders: resolved config, tracking set-up, per-step metrics and the final summary."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from transformers import TrainerCallback

from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def barrier() -> None:
    """Wait for every rank when a process group is up (no-op in single-process runs)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def requeue_count() -> int:
    """How often SLURM has requeued this job (``SLURM_RESTART_COUNT``; 0 outside SLURM).
    A requeued run always resumes from its last complete checkpoint: starting over would
    overwrite the steps it already paid for."""
    try:
        return max(0, int(os.environ.get("SLURM_RESTART_COUNT", "0")))
    except ValueError:
        return 0


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes, from the launcher's environment."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def join_process_group(configured_cpu: bool) -> None:
    """Start the launcher's process group now, as the Trainer would (accelerate's
    ``PartialState`` with the Trainer's ``use_cpu``), for work before the Trainer exists:
    the held-out evaluation before training gathers its ranks' rows through it."""
    import torch.distributed as dist

    if rank_and_world()[1] > 1 and not dist.is_initialized():
        from accelerate import PartialState

        PartialState(cpu=use_cpu(configured_cpu))


def all_gather(items: list) -> list:
    """Every rank's ``items`` concatenated in rank order, on every rank (picklable objects)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(items)
    parts: list = [None] * dist.get_world_size()
    dist.all_gather_object(parts, list(items))
    return [x for part in parts for x in part]


def local_device():
    """This rank's GPU when there is one, else the CPU."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def use_cpu(configured: bool) -> bool:
    """The Trainer's ``use_cpu``: as configured, and forced on for several processes without
    a GPU. ``accelerate launch`` with FSDP does not export ``ACCELERATE_USE_CPU``, and with
    ``use_cpu=False`` on a CPU-only host the Trainer drops to one independent, unsharded run
    per rank (each training on the same batches and writing the same files)."""
    import torch

    several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    return configured or (several and not torch.cuda.is_available())


def gradient_checkpointing(configured: bool) -> bool:
    """The Trainer's ``gradient_checkpointing``: off where the launcher's FSDP config already
    checkpoints activations (``fsdp_activation_checkpointing``), since transformers refuses
    both at once and FSDP's own checkpointing avoids a redundant all-gather in the backward."""
    if configured and os.environ.get("FSDP_ACTIVATION_CHECKPOINTING", "false").lower() == "true":
        log.info(
            "activation checkpointing is FSDP's (accelerate config): trainer.gradient_checkpointing yields"
        )
        return False
    return configured


def prepare_run_dir(run: RunConfig, run_dir: Path) -> Path:
    """Create the run folder and write the resolved config (rank 0)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(run)))
    return run_dir


def configure_tracking(run: RunConfig, run_dir: Path) -> None:
    """W&B's mode, project and folder through the environment (never a login); each stage's
    run, its identity and what it logs: ``rlvr.tracking``."""
    if run.logger.name != "wandb":
        os.environ["WANDB_MODE"] = "disabled"
        return
    if os.environ.get("WANDB_MODE") != "disabled":  # tests force disabled; respect it
        mode = run.logger.mode
        if mode == "online" and not os.environ.get("WANDB_API_KEY"):
            log.warning("logger.mode=online but WANDB_API_KEY is unset: logging offline instead")
            mode = "offline"
        os.environ["WANDB_MODE"] = mode
    os.environ["WANDB_PROJECT"] = run.logger.project
    if run.logger.entity:
        os.environ["WANDB_ENTITY"] = run.logger.entity
    os.environ["WANDB_DIR"] = str(run_dir)
    os.environ.setdefault("WANDB_SILENT", "true")


@dataclass
class StepClock:
    """Wall time per step and its split (generation, reward, teacher, update) for accounting."""

    start: float = field(default_factory=time.perf_counter)
    step_start: float = 0.0
    last_generation: float = 0.0
    last_reward: float = 0.0
    last_ahead: float = 0.0
    last_teacher: float = 0.0


class MetricsFileCallback(TrainerCallback):
    """Appends every logged dict to ``metrics.jsonl`` and adds step timings (rank 0); with a
    tracker, logs the same record to the stage's W&B run on the trainer's global step."""

    def __init__(
        self, path: Path, trainer_ref: dict[str, Any], reward_timer, tracker: Any = None
    ) -> None:
        self.path = path
        self.tracker = tracker  # rlvr.tracking.wandb_run.StageRun: the same record, to W&B
        self.trainer_ref = trainer_ref  # filled after the trainer exists
        self.reward_timer = reward_timer
        self.clock = StepClock()
        self.pending: dict[str, float] = {}

    def on_step_begin(self, args, state, control, **kwargs):
        self.clock.step_start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        trainer = self.trainer_ref.get("trainer")
        step_s = time.perf_counter() - self.clock.step_start
        gen_total = getattr(trainer, "generation_seconds", 0.0)
        gen_s = gen_total - self.clock.last_generation
        reward_s = self.reward_timer.reward_s - self.clock.last_reward
        self.clock.last_generation, self.clock.last_reward = gen_total, self.reward_timer.reward_s
        ahead_total = self.reward_timer.ahead_s
        ahead_s, self.clock.last_ahead = ahead_total - self.clock.last_ahead, ahead_total
        self.pending = {
            "time/step_s": step_s,
            "time/generation_s": gen_s,
            "time/reward_s": reward_s,  # on the step's path
            "time/reward_ahead_s": ahead_s,  # graded during generation, inside generation_s
        }
        teacher_total = getattr(trainer, "teacher_seconds", None)  # distillation only
        teacher_s = 0.0
        if teacher_total is not None:
            teacher_s = teacher_total - self.clock.last_teacher
            self.clock.last_teacher = teacher_total
            self.pending["time/teacher_s"] = teacher_s
        self.pending["time/update_s"] = max(step_s - gen_s - reward_s - teacher_s, 0.0)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not is_main_process() or logs is None:  # env rank: see stages.heldout_eval
            return
        record = {"step": state.global_step, **logs, **self.pending}
        length = logs.get("completions/mean_length")
        if length is not None and self.pending.get("time/generation_s"):
            batch = args.generation_batch_size if hasattr(args, "generation_batch_size") else 0
            record["time/tokens_per_s"] = length * (batch or 0) / self.pending["time/generation_s"]
        with self.path.open("a") as f:
            f.write(json.dumps(record, default=float) + "\n")
        if self.tracker is not None:
            self.tracker.log(record, state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if self.tracker is not None:
            self.tracker.finish()
            self.tracker = None


class DataIdLog:
    """Appends ``{"step", "rank", "ids"}`` per generation batch to a JSONL file: which prompts
    each optimiser step trained on (resume equivalence, data audits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rank = int(os.environ.get("RANK", "0"))

    def __call__(self, step: int, ids: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, "rank": self.rank, "ids": ids}) + "\n")


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def device_seconds(wall_s: float) -> dict[str, float]:
    """Processes x wall time, plus GPU-hours when the processes hold GPUs."""
    procs = int(os.environ.get("WORLD_SIZE", "1"))
    out = {"processes": procs, "wall_s": wall_s, "device_seconds": procs * wall_s}
    try:
        import torch

        if torch.cuda.is_available():
            out["gpu_hours"] = procs * wall_s / 3600
    except ImportError:
        pass
    return out


def write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=_jsonable))
    tmp.replace(path)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "__dataclass_fields__"):
        return asdict(obj)
    return str(obj)
