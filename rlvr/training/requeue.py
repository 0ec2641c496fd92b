"""How a SLURM job tells its training stage to checkpoint and stop: the signal, the request file,
the wait and the exit status (standard library only: the job's process imports it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

# EX_TEMPFAIL: stopped after a checkpoint because the job is ending; run again, it resumes
REQUEUE_EXIT = 75
# a file whose existence asks the stage to checkpoint and stop (set by the study's SLURM job)
REQUEST_ENV = "RLVR_CHECKPOINT_REQUEST"
SIGNAL = signal.SIGUSR2  # submitit's time-out and preemption signal on SLURM


def ask_and_wait(request: Path, pid: int | None) -> None:
    """Write ``request`` and wait for the stage process ``pid`` (a child of this one) to exit,
    at most until 15 s before the job's end; the child stays unreaped for its owner."""
    request.parent.mkdir(parents=True, exist_ok=True)
    request.touch()
    deadline = _job_end() - 15
    while pid is not None and time.time() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:
            return
        time.sleep(0.5)


def _job_end() -> float:
    """When SLURM ends this job (epoch seconds); in 10 minutes where it does not say."""
    try:
        job = os.environ["SLURM_JOB_ID"]
        squeue = ["squeue", "-h", "-j", job, "-o", "%e"]
        end = subprocess.run(squeue, capture_output=True, text=True, timeout=30).stdout.strip()
        return time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S"))
    except (KeyError, OSError, ValueError, subprocess.SubprocessError):
        return time.time() + 600
