"""How a SLURM job tells its training stage to checkpoint and stop: the signal, the request file
and the exit status (standard library only: the job's own process imports it, not the trainer)."""

from __future__ import annotations

import signal

# EX_TEMPFAIL: stopped after a checkpoint because the job is ending; run again, it resumes
REQUEUE_EXIT = 75
# a file whose existence asks the stage to checkpoint and stop (set by the study's SLURM job)
REQUEST_ENV = "RLVR_CHECKPOINT_REQUEST"
SIGNAL = signal.SIGUSR2  # submitit's time-out and preemption signal on SLURM
