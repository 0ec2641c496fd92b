"""Where stages run: local processes, or submitit jobs (its local executor, or SLURM).

No scheduler of our own: locally a stage is a child process (``rlvr.study.local_launcher``,
optionally forked from a warm stage server); on a cluster it is a submitit
job with ``afterok`` dependencies on its inputs' jobs, requeued on preemption (training
stages carry ``resume=true`` and continue from their newest complete checkpoint).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rlvr.study.manifest import log_path, mark_done, mark_started, read_json
from rlvr.study.plan import Stage
from rlvr.study.stage_process import die_with_parent
from rlvr.training.requeue import REQUEST_ENV, SIGNAL, ask_and_wait


@dataclass
class StageJob:
    """One stage's process and its completion rule; picklable, so submitit can run it."""

    root: Path
    stage: Stage
    config_hash: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "."
    processes: int = 1
    machines: int = 1  # nodes: accelerate launch runs once on each, with its machine_rank
    port: int = 29500  # the main node's rendezvous port (multi-node)
    settings: dict[str, str] = field(default_factory=dict)  # what the hash covers, readable

    @property
    def log(self) -> Path:
        return log_path(self.root, self.stage.name)

    def prepare(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        mark_started(self.root, self.stage, self.config_hash, self.settings)

    def finish(self, returncode: int, wall_s: float, cpu_s: float | None = None) -> dict[str, Any]:
        """Facts of a finished process; the done marker when it succeeded with full outputs."""
        facts = {
            "returncode": returncode,
            "wall_s": wall_s,
            "cpu_s": cpu_s,  # user + system seconds of the stage's process tree, where known
            "device_s": self.device_seconds(wall_s),
            "end": time.time(),
        }
        if returncode == 0:
            try:
                mark_done(self.root, self.stage, self.config_hash, facts)
            except RuntimeError as err:
                with self.log.open("a") as fh:
                    fh.write(f"\n[rlvr.study] {err}\n")
                facts["returncode"] = 1
        return facts

    def device_seconds(self, wall_s: float) -> float:
        """The stage's own record when it keeps one (runs, merges), else processes x wall."""
        for name in ("summary.json", "merge.json"):
            data = read_json(self.stage.out_dir / name) or {}
            recorded = (data.get("compute") or {}).get("device_seconds", data.get("device_seconds"))
            if recorded is not None and self.stage.kind != "eval":
                return float(recorded)
        return self.processes * wall_s

    def __call__(self) -> int:
        """Run inside a submitit job: the command, then the marker (the driver may be gone).
        On several nodes every node runs its own ``accelerate launch``; the first keeps the
        stage's log and markers, the others log to ``<stage>.node<k>.log``."""
        argv, node = self.argv, 0
        if self.machines > 1:
            import submitit

            from rlvr.study.commands import node_argv

            env = submitit.JobEnvironment()
            node = env.node
            argv = node_argv(self.argv, node, env.hostnames[0], self.port)
        if node:
            return self._run(argv, self.log.with_suffix(f".node{node}.log"))
        self.prepare()
        self.request.unlink(missing_ok=True)  # asked of the job before this requeue
        started = time.time()
        with _held_on_sigterm() as stopping:
            code = self._run(argv, self.log)
            if stopping:  # SLURM is ending the job (requeue, cancel, preemption): report
                time.sleep(3600)  # nothing, so no failure reaches the study; SIGKILL follows
        return int(self.finish(code, time.time() - started)["returncode"])

    @property
    def request(self) -> Path:
        """The file that asks the stage's training to checkpoint and stop (the job is ending)."""
        return self.log.with_suffix(".checkpoint-request")

    def _run(self, argv: list[str], log: Path) -> int:
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, REQUEST_ENV: str(self.request)}
        with log.open("a") as fh:
            proc = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                preexec_fn=_stage_preexec,
            )
            _RUNNING[:] = [proc.pid]
            with proc:
                return proc.wait()

    def checkpoint(self, *args: Any, **kwargs: Any):
        """submitit's hook on SLURM's end-of-job signal (time-out or preemption): ask the
        stage to checkpoint its current step and wait until it has exited (at most until the
        job's end), then submitit requeues the same job, which resumes from that checkpoint."""
        from submitit.helpers import DelayedSubmission

        ask_and_wait(self.request, _RUNNING[0] if _RUNNING else None)
        return DelayedSubmission(self, *args, **kwargs)


_RUNNING: list[int] = []  # the stage process of this job, once started (not pickled)


def _stage_preexec() -> None:
    """The stage's processes ignore SLURM's end-of-job signal, which would kill each helper
    process mid-step: the trainer reads the request file instead (checkpoint_signals)."""
    die_with_parent()
    signal.signal(SIGNAL, signal.SIG_IGN)


@contextmanager
def _held_on_sigterm() -> Iterator[list[int]]:
    """Inside a SLURM job, note SIGTERM (SLURM's first word when it ends a job) instead of
    dying; the list becomes non-empty once it came. Elsewhere a no-op."""
    if "SLURM_JOB_ID" not in os.environ:
        yield []
        return
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


class Launcher(Protocol):
    name: str
    submits_ahead: bool  # True: dependents may be submitted before their inputs finish
    capacity: int  # stages held at once

    def warm_up(self, jobs: Sequence[StageJob]) -> None: ...  # the stages to come, in order

    def start(self, job: StageJob, deps: Sequence[Any]) -> Any: ...

    def poll(self, handle: Any) -> int | None: ...

    def cancel(self, handle: Any) -> None: ...

    def cpu_seconds(self, handle: Any) -> float | None: ...  # of a finished stage, if known

    def wait(self, handles: Sequence[Any], timeout: float) -> None: ...  # until one may be done

    def states(self, job_ids: Sequence[str]) -> dict[str, str]: ...  # the cluster's words

    def close(self) -> None: ...  # the study is over: release what the launcher holds


# submitit settings its executors take when built, not through update_parameters
CONSTRUCTOR_PARAMS = (
    "slurm_max_num_timeout",
    "slurm_python",
    "local_max_num_timeout",
    "local_python",
)


class SubmititLauncher:
    """submitit jobs: ``cluster="local"`` runs them as local processes (dependencies held back
    by the study until their inputs are done); ``cluster="slurm"`` submits every stage at once
    with ``afterok`` dependencies and lets SLURM order them. On SLURM a job is finished when
    submitit's result file appears, or failed when SLURM reports it ended without one
    (``squeue``/``sacct``, ``rlvr.study.slurm``): a cancelled, timed-out or lost job."""

    def __init__(
        self,
        root: Path,
        cluster: str,
        jobs: int,
        params: Mapping[str, Any],
        by_kind: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        import submitit

        self.name = f"submitit_{cluster}"
        self.cluster = cluster
        self.submits_ahead = cluster == "slurm"
        self.capacity = 10**6 if self.submits_ahead else jobs
        self.folder = root / ".submitit"
        self.params = dict(params)
        self.by_kind = {k: dict(v) for k, v in (by_kind or {}).items()}
        self._submitit = submitit
        self._states: dict[str, str] = {}  # job id -> SLURM state, refreshed by poll
        self._checked = 0.0
        self._ended_without_result: dict[str, float] = {}  # job id -> when first seen so

    def warm_up(self, jobs: Sequence[StageJob]) -> None:
        """Nothing to start ahead: each job imports on its own node."""

    def start(self, job: StageJob, deps: Sequence[Any]) -> Any:
        kind = self.by_kind.get(job.stage.kind, {})
        params: dict[str, Any] = {"name": job.stage.name, **self.params, **kind}
        if job.machines > 1:  # one task per node; accelerate starts the ranks on each
            params.update(nodes=job.machines, tasks_per_node=1)
        ctor = {k: params.pop(k) for k in CONSTRUCTOR_PARAMS if k in params}
        folder = str(self.folder / "%j")
        executor = self._submitit.AutoExecutor(folder=folder, cluster=self.cluster, **ctor)
        if self.cluster == "slurm" and deps:
            extra = dict(params.pop("slurm_additional_parameters", {}) or {})
            extra["dependency"] = "afterok:" + ":".join(str(d.job_id) for d in deps)
            params["slurm_additional_parameters"] = extra
        executor.update_parameters(**params)
        handle = executor.submit(job)
        self._states[str(handle.job_id)] = "PENDING"
        return handle

    def attach(self, job_id: str) -> Any:
        """A SLURM job an earlier driver submitted, followed instead of submitted again."""
        handle = self._submitit.SlurmJob(folder=self.folder / "%j", job_id=str(job_id))
        self._states[str(job_id)] = "PENDING"
        return handle

    def wait(self, handles: Sequence[Any], timeout: float) -> None:
        time.sleep(timeout)  # jobs end in files or the cluster's queue: polled

    def poll(self, handle: Any) -> int | None:
        if self.cluster == "slurm":
            if not handle.paths.result_pickle.exists():
                return self._ended_badly(str(handle.job_id))
        elif not handle.done():
            return None
        try:
            return int(handle.result())
        except Exception:  # noqa: BLE001  (the job's own error is in its submitit log)
            return -1

    def _ended_badly(self, job_id: str) -> int | None:
        """-1 once SLURM says the job ended without a result (failed, cancelled, timed out,
        or completed with no result file after a grace for slow file systems); else None."""
        from rlvr.study import slurm

        if time.monotonic() - self._checked > 2:  # one squeue call for all jobs per round
            live = [j for j, s in self._states.items() if s not in slurm.FAILED]
            self._states.update(slurm.job_states(live))
            self._checked = time.monotonic()
        state = self._states.get(job_id, "")
        if state in slurm.FAILED:
            return -1
        if state == "COMPLETED":
            first = self._ended_without_result.setdefault(job_id, time.monotonic())
            return -1 if time.monotonic() - first > 30 else None
        return None

    def cancel(self, handle: Any) -> None:
        handle.cancel(check=False)

    def cpu_seconds(self, handle: Any) -> float | None:
        return None  # the job ran elsewhere; SLURM's accounting (sacct) has it

    def states(self, job_ids: Sequence[str]) -> dict[str, str]:
        if self.cluster != "slurm":
            return {}
        from rlvr.study import slurm

        found = slurm.job_states(job_ids)
        self._states.update(found)
        return found

    def close(self) -> None:
        return None


def thread_env(jobs: int, launcher: Launcher, stage: Stage) -> dict[str, str]:
    """Split this machine's cores between the stages that run at once (local launchers only):
    OpenMP threads oversubscribing the cores slow small models several-fold. An exclusive
    stage runs alone and takes them all."""
    if launcher.submits_ahead:
        return {}
    cores = os.cpu_count() or 1
    threads = str(cores if stage.exclusive else max(1, cores // max(1, jobs)))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
