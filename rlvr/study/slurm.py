"""What SLURM says of a study's jobs: their states (``squeue``, then ``sacct``), and cancelling.

The study folder keeps each submitted stage's job id (``study.json``), so a driver that died
leaves jobs a rerun can find: those still queued or running are followed, not resubmitted.
States are SLURM's own words (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from rlvr.study.manifest import MANIFEST, read_json, write_json

# A job in one of these may still run (or run again) and finish its stage.
ACTIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SUSPENDED",
        "STOPPED",
        "SIGNALING",
        "STAGE_OUT",
        "PREEMPTED",
    }
)
# Ended without its stage: the job's dependents can never start.
FAILED = frozenset(
    {
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    }
)


def _run(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def job_states(job_ids: Iterable[str]) -> dict[str, str]:
    """job id -> SLURM state, for the ids SLURM still knows (``squeue`` keeps finished jobs for
    ``MinJobAge``; ``sacct``, where the cluster keeps accounting, answers for older ones)."""
    ids = sorted({str(j) for j in job_ids if j})
    if not ids:
        return {}
    states = _parse(_run(["squeue", "-h", "-t", "all", "-o", "%i|%T", "-j", ",".join(ids)]))
    if rest := [i for i in ids if i not in states]:
        states.update(_parse(_run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(rest)])))
    return {i: states[i] for i in ids if i in states}


def _parse(text: str) -> dict[str, str]:
    states = {}
    for line in text.splitlines():
        job, _, state = line.strip().partition("|")
        if job and state:
            states[job] = state.split()[0].rstrip("+")  # sacct: "CANCELLED by 0"
    return states


def cancel(job_ids: Iterable[str]) -> list[str]:
    """``scancel`` the jobs that are still active; returns their ids."""
    active = [j for j, s in job_states(job_ids).items() if s in ACTIVE]
    if active:
        subprocess.run(["scancel", *active], capture_output=True, text=True, timeout=60)
    return active


def submitted_jobs(root: Path) -> dict[str, tuple[str, str]]:
    """stage -> (job id, config hash) of every stage ``study.json`` says is running: what a
    driver that died left behind (one stopped by SIGTERM or Ctrl-C cancelled its jobs)."""
    manifest = read_json(root / MANIFEST) or {}
    if manifest.get("plan", {}).get("launcher") != "slurm":  # job ids of local runs are pids
        return {}
    stages = manifest.get("stages", {})
    return {
        name: (str(e["job_id"]), e.get("config_hash"))
        for name, e in stages.items()
        if e.get("job_id") and e.get("status") == "running"
    }


def still_running(
    submitted: Mapping[str, tuple[str, str]], hashes: Mapping[str, str], reuse: Iterable[str]
) -> dict[str, str]:
    """stage -> job id of the submitted jobs to follow: same config, not finished, and still
    queued or running in SLURM."""
    done = set(reuse)
    same = {n: j for n, (j, h) in submitted.items() if hashes.get(n) == h and n not in done}
    states = job_states(same.values())
    return {n: j for n, j in same.items() if states.get(j) in ACTIVE}


def cancel_study(root: Path) -> list[str]:
    """``study.cancel=true``: scancel the jobs ``study.json`` lists as running and mark their
    stages cancelled (the study command resubmits them, and training resumes); returns the
    ids cancelled."""
    submitted = submitted_jobs(root)
    cancelled = cancel(job for job, _ in submitted.values())
    if submitted:
        manifest = read_json(root / MANIFEST) or {}
        for name in submitted:
            manifest["stages"][name]["status"] = "cancelled"
        write_json(root / MANIFEST, manifest)
    return cancelled
