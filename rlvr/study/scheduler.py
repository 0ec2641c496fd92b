"""Run the planned stages through a launcher: dependencies first, failures stop dependents only.

Statuses: pending, running, done (ran now), skipped (done before with the same config),
failed (its process failed or left incomplete outputs), blocked (an input stage failed).
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.study.launchers import Launcher, StageJob
from rlvr.study.manifest import Manifest, invalidate, missing_outputs
from rlvr.study.plan import Stage
from rlvr.study.progress import Progress

log = logging.getLogger(__name__)

FINISHED = ("done", "skipped")
STOPPED = ("failed", "blocked")


class Interrupted(Exception):
    """SIGINT / SIGTERM: running stages were stopped; a rerun resumes them."""


def run_stages(
    stages: Sequence[Stage],
    jobs: Mapping[str, StageJob],
    launcher: Launcher,
    manifest: Manifest,
    reuse: Sequence[str],
    stale: Mapping[str, str],
    progress: Progress,
    poll_s: float = 1.0,
    attached: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Every stage to a final status; returns name -> status. ``attached``: stage name ->
    handle of a job an earlier driver submitted that still runs (followed, not restarted)."""
    status = {s.name: ("skipped" if s.name in reuse else "pending") for s in stages}
    for s in stages:
        if s.name in stale:
            log.warning("stage %s reruns: %s", s.name, stale[s.name])
            invalidate(manifest.root, s)
        if status[s.name] == "skipped":
            manifest.entries[s.name]["status"] = "skipped"
    running: dict[str, tuple[Any, float]] = {}
    for name, handle in (attached or {}).items():
        running[name] = (handle, manifest.entries[name].get("start") or time.time())
        status[name] = "running"
        manifest.entries[name]["status"] = "running"
    manifest.save()
    start_order = sorted(stages, key=lambda s: -s.work)  # largest first; ties in plan order
    launcher.warm_up([jobs[s.name] for s in stages if status[s.name] == "pending"])
    by_name = {s.name: s for s in stages}
    previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM)}

    def stop(signum, frame):  # noqa: ARG001
        raise Interrupted(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            _block_dependents(stages, status, running, launcher, manifest)
            _start_ready(start_order, status, running, jobs, launcher, manifest)
            watched, ended = [], False
            for name, (handle, started) in list(running.items()):
                if any(status[d] in STOPPED for d in by_name[name].deps):
                    continue  # blocked below, whatever its job says
                code = launcher.poll(handle)
                if code is None:
                    watched.append(handle)
                    continue
                del running[name]
                cpu_s = launcher.cpu_seconds(handle)
                _finished(name, code, started, jobs[name], status, manifest, cpu_s)
                ended = True
            _block_dependents(stages, status, running, launcher, manifest)
            progress.render(status, {n: t for n, (_, t) in running.items()})
            if not running and not _startable(stages, status, launcher):
                break
            if not ended:  # else its dependents may start now
                launcher.wait(watched, poll_s)
    except (KeyboardInterrupt, Interrupted):
        for name, (handle, _) in running.items():
            launcher.cancel(handle)
            manifest.entries[name]["status"] = "interrupted"
        manifest.save()
        raise Interrupted("stopped; rerun the same command to resume") from None
    finally:
        signal.signal(signal.SIGTERM, previous[signal.SIGTERM])
    _record_cluster_states(launcher, manifest)
    progress.render(status, {}, final=True)
    return status


def _record_cluster_states(launcher: Launcher, manifest: Manifest, wait_s: float = 15) -> None:
    """Every job's final state in ``study.json`` (a job is still ending for a moment after its
    result is written, so states that are not final yet are asked again for a few seconds)."""
    from rlvr.study.slurm import ACTIVE

    ids = {n: str(e["job_id"]) for n, e in manifest.entries.items() if e.get("job_id")}
    deadline = time.monotonic() + wait_s
    while ids:
        states = launcher.states(list(ids.values()))
        if not states:
            return
        for name, job in ids.items():
            if job in states:
                manifest.entries[name]["slurm_state"] = states[job]
        if not any(s in ACTIVE for s in states.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    manifest.save()


def _ready(stage: Stage, status: Mapping[str, str], launcher: Launcher) -> bool:
    ok = FINISHED + (("running",) if launcher.submits_ahead else ())
    return status[stage.name] == "pending" and all(status[d] in ok for d in stage.deps)


def _startable(stages: Sequence[Stage], status: Mapping[str, str], launcher: Launcher) -> bool:
    return any(_ready(s, status, launcher) for s in stages)


def _start_ready(stages, status, running, jobs, launcher: Launcher, manifest: Manifest) -> None:
    """Start ready stages in the given order (``run_stages`` passes the largest first)."""
    by_name = {s.name: s for s in stages}
    for stage in stages:
        if len(running) >= launcher.capacity:
            return
        if not _ready(stage, status, launcher):
            continue
        if not launcher.submits_ahead and any(by_name[n].exclusive for n in running):
            return
        if not launcher.submits_ahead and stage.exclusive and running:
            continue
        if not launcher.submits_ahead and _twin_running(stage, by_name, running):
            continue
        if missing := _missing_input(stage, by_name, status):
            status[stage.name] = "failed"
            manifest.update(stage.name, status="failed", returncode=None, error=missing)
            continue
        deps = [running[d][0] for d in stage.deps if d in running]
        handle = launcher.start(jobs[stage.name], deps)
        running[stage.name] = (handle, time.time())
        status[stage.name] = "running"
        job_id = getattr(handle, "job_id", None)  # SLURM's (a rerun follows it) or a pid
        manifest.update(
            stage.name,
            status="running",
            start=time.time(),
            end=None,
            job_id=job_id,
            slurm_state=None,
        )


def _twin_running(stage: Stage, by_name: Mapping[str, Stage], running) -> bool:
    """Whether a running stage evaluates weights equal to this stage's: it then waits, and
    reuses that one's records when it starts (two evaluations would sample the same)."""
    from rlvr.evaluation.reuse import weights_fingerprint

    if stage.weights is None:
        return False
    mine = weights_fingerprint(stage.weights)
    others = (by_name[n].weights for n in running if by_name[n].weights is not None)
    return mine is not None and any(weights_fingerprint(w) == mine for w in others)


def _missing_input(stage: Stage, by_name: Mapping[str, Stage], status) -> str | None:
    """A finished input whose outputs are gone (deleted by hand): name the stage that makes it.
    Inputs still running (submitted ahead on SLURM) have not made theirs yet."""
    for dep in stage.deps:
        if dep not in by_name or status[dep] not in FINISHED:
            continue
        if missing := missing_outputs(by_name[dep]):
            return f"input {missing[0]} is missing; stage {dep} makes it: rerun the study command and {dep} runs again"
    return None


def _finished(name: str, code: int, started: float, job: StageJob, status, manifest, cpu_s=None) -> None:
    """Check the outputs and write the marker (again, for submitit jobs that wrote their own)."""
    facts = job.finish(code, time.time() - started, cpu_s)
    status[name] = "done" if facts["returncode"] == 0 else "failed"
    manifest.update(name, status=status[name], **facts)


def _block_dependents(stages, status, running, launcher: Launcher, manifest: Manifest) -> None:
    changed = True
    while changed:
        changed = False
        for stage in stages:
            if status[stage.name] not in ("pending", "running"):
                continue
            failed = [d for d in stage.deps if status[d] in STOPPED]
            if not failed or (status[stage.name] == "running" and not launcher.submits_ahead):
                continue
            if stage.name in running:  # submitted ahead (SLURM): its afterok can never hold
                launcher.cancel(running.pop(stage.name)[0])
            status[stage.name] = "blocked"
            manifest.update(stage.name, status="blocked", blocked_by=failed)
            changed = True
