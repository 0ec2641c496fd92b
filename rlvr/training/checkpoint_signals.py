"""Checkpoints no requeue loses: one when SLURM announces the job's end, and one by the clock.

SLURM sends ``--signal`` (submitit: ``USR2``, ``slurm_signal_delay_s`` before the time limit)
to every process of the job. A study's job (``rlvr.study.launchers.StageJob``) keeps the
signal from its stage's processes and writes a request file instead, named by
:data:`REQUEST_ENV`: helper processes (vLLM engines, grading workers) would otherwise die of
it mid-step. A stage run on its own (``python -m rlvr.train`` in a user's ``sbatch``) catches
``USR2`` itself. Either way every rank reads the request at its step end and the ranks agree
(the maximum over them), so all save the same step: the Trainer's full checkpoint (weights,
optimizer, RNG, data position), as a periodic one holds, then stop; the process exits with
:data:`REQUEUE_EXIT` and the requeued job resumes from that checkpoint, the newest.

``trainer.save_every_min`` saves too once that many minutes passed since the last save (or
the start), decided the same way, so a job killed without warning loses at most that much.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlvr.training.requeue import REQUEST_ENV, REQUEUE_EXIT, SIGNAL

log = logging.getLogger(__name__)

__all__ = ["REQUEST_ENV", "REQUEUE_EXIT", "SIGNAL", "CheckpointOnSignal", "exit_for_requeue"]


def agree(flags: list[bool]) -> list[bool]:
    """Each flag true on every rank when it is true on any (one all-reduce; alone: as is)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flags
    device = "cpu"
    if "nccl" in str(dist.get_backend()).lower():
        from rlvr.runs.folders import local_device

        device = local_device()
    values = torch.tensor([float(f) for f in flags], device=device)
    dist.all_reduce(values, op=dist.ReduceOp.MAX)
    return [bool(v) for v in values.tolist()]


class CheckpointOnSignal(TrainerCallback):
    """Saves at the end of the step during which the job's end was announced, then stops
    training; saves whenever ``every_min`` minutes passed since the last save (0: never)."""

    def __init__(
        self,
        every_min: float = 0.0,
        request: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = max(0.0, float(every_min)) * 60
        env = os.environ.get(REQUEST_ENV)
        self.request = request or (Path(env) if env else None)
        self.clock = clock
        self.last_save = clock()
        self.signalled = False
        self.stopped_at: int | None = None  # the step saved and stopped at
        self.previous: Any = None  # the handler install replaced (submitit's, in its job)

    def install(self) -> CheckpointOnSignal:
        """Catch :data:`SIGNAL` in this process while it trains, unless a request file carries
        it instead (then the signal stays ignored here and in every helper process started
        from here)."""
        if self.request is None:
            self.previous = signal.signal(SIGNAL, self._on_signal)
        return self

    def uninstall(self) -> None:
        if self.request is None and self.previous is not None:
            signal.signal(SIGNAL, self.previous)

    def _on_signal(self, signum, frame) -> None:
        self.signalled = True  # acted on at the step end: a handler must not do the work

    def requested(self) -> bool:
        return self.signalled or (self.request is not None and self.request.exists())

    def on_train_begin(self, args, state, control, **kwargs):
        self.last_save = self.clock()  # a resumed run starts from a checkpoint just loaded

    def on_step_end(self, args, state, control, **kwargs):
        due = self.every_s > 0 and self.clock() - self.last_save >= self.every_s
        stop, due = agree([self.requested(), due])
        if stop or due:
            control.should_save = True
        if stop:
            control.should_training_stop = True
            self.stopped_at = state.global_step
        if stop and state.is_world_process_zero:
            log.warning("the job is ending: checkpoint at step %d, then stop", state.global_step)
        elif due and state.is_world_process_zero:
            minutes = self.every_s / 60
            log.info("%.0f min since the last checkpoint: step %d", minutes, state.global_step)
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last_save = self.clock()

    def stopped_early(self, max_steps: int) -> bool:
        """True when training stopped for the job's end before ``max_steps``."""
        return self.stopped_at is not None and (max_steps <= 0 or self.stopped_at < max_steps)


def exit_for_requeue(step: int, previous: Any = None) -> None:
    """End this process after the signal's checkpoint, with the status that says so. Where
    training runs inside a submitit job itself (Hydra's submitit launcher), the handler it
    held the signal from (submitit's) runs now: it requeues the job and exits."""
    from rlvr.runs.folders import barrier, is_main_process

    barrier()  # every rank has written its part of the checkpoint
    if is_main_process():
        log.warning("checkpoint-%d saved; exiting with %d for the requeue", step, REQUEUE_EXIT)
    if callable(previous):
        previous(SIGNAL, None)
    raise SystemExit(REQUEUE_EXIT)
