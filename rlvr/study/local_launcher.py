"""Stages as local child processes, ``jobs`` at a time: started fresh or forked from a warm
stage server, reaped with their CPU seconds, waited on until one ends, stopped with every
process under them."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from rlvr.study.launchers import StageJob
from rlvr.study.stage_process import die_with_parent
from rlvr.study.warm_start import WarmProcess, WarmStart


class LocalLauncher:
    """Child processes, ``jobs`` at a time, each in its own session with its log file; with a
    ``WarmStart``, forked from a server that imported the libraries once."""

    name = "local"
    submits_ahead = False

    def __init__(self, jobs: int, warm: WarmStart | None = None) -> None:
        self.capacity = jobs
        self.warm = warm
        self._cpu: dict[int, float] = {}  # pid -> CPU seconds of a reaped stage
        self._pidfds: dict[int, int] = {}  # pid -> its pidfd, while the stage runs

    def start(self, job: StageJob, deps: Sequence[Any]) -> subprocess.Popen | WarmProcess:
        job.prepare()
        if self.warm is not None:
            env = {**os.environ, **job.env}
            handle = self.warm.start(job.argv, env, job.cwd, str(job.log))
            if handle is not None:
                return handle
        with job.log.open("a") as fh:
            return subprocess.Popen(
                job.argv,
                cwd=job.cwd,
                env={**os.environ, **job.env},
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def warm_up(self, jobs: Sequence[StageJob]) -> None:
        """Start the stage servers ``jobs`` (the stages to come, in start order) will need."""
        if self.warm is not None:
            self.warm.prepare([(job.argv, {**os.environ, **job.env}) for job in jobs])

    def poll(self, handle: subprocess.Popen) -> int | None:
        """The exit code once the stage ended; reaped with ``wait4`` for its CPU seconds (its
        own and those of the processes it waited for: verifier workers, sandboxes)."""
        if isinstance(handle, WarmProcess):  # the fork server reaped it
            code = handle.poll()
            if code is not None:
                self._cpu[handle.pid] = handle.cpu_s
            return code
        if handle.returncode is None:
            try:
                pid, status, usage = os.wait4(handle.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (Popen.wait in a cancel)
                return handle.poll()
            if pid == 0:
                return None
            handle.returncode = os.waitstatus_to_exitcode(status)
            self._cpu[handle.pid] = usage.ru_utime + usage.ru_stime
        return handle.returncode

    def cancel(self, handle: subprocess.Popen) -> None:
        if self.poll(handle) is None:
            stop_tree(handle, grace_s=20)

    def wait(self, handles: Sequence[Any], timeout: float) -> None:
        """Until one of the stages ``handles`` may have ended, at most ``timeout`` seconds:
        the next stage starts when a core frees, not at the next tick (a study has about a
        hundred stages on two cores). Fork-server stages end on their server's pipe, fresh
        processes on a pidfd; without pidfds, it sleeps."""
        fds: set[int] = set()
        for handle in handles:
            if isinstance(handle, WarmProcess):
                if handle.pid in handle.server.ended or handle.server.fileno() is None:
                    return  # already reported (or the server is gone): poll now
                fds.add(handle.server.fileno())
            elif handle.returncode is None:
                fd = _pidfd(self._pidfds, handle.pid)
                if fd is None:
                    time.sleep(timeout)
                    return
                fds.add(fd)
        for pid in [p for p in self._pidfds if all(h.pid != p for h in handles)]:
            os.close(self._pidfds.pop(pid))
        if fds:
            select.select(list(fds), [], [], timeout)
        else:
            time.sleep(timeout)

    def cpu_seconds(self, handle: subprocess.Popen) -> float | None:
        return self._cpu.get(handle.pid)

    def states(self, job_ids: Sequence[str]) -> dict[str, str]:
        return {}

    def close(self) -> None:
        for fd in self._pidfds.values():
            os.close(fd)
        self._pidfds.clear()
        if self.warm is not None:
            self.warm.close()


def _pidfd(fds: dict[int, int], pid: int) -> int | None:
    """A descriptor that turns readable when process ``pid`` ends (None: not on this OS)."""
    if pid not in fds:
        try:
            fds[pid] = os.pidfd_open(pid)
        except (AttributeError, OSError):
            return None
    return fds[pid]


def stop_tree(handle: subprocess.Popen | WarmProcess, grace_s: float) -> None:
    """SIGTERM a stage and every process under it, then SIGKILL what is left after the grace.

    The stage's process group is not enough: ``accelerate launch`` starts each rank in a
    session of its own (and the verifier pool its workers), so ranks would outlive the group
    and keep writing into the folder a rerun resumes from."""
    import psutil

    try:
        tree = [psutil.Process(handle.pid), *psutil.Process(handle.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for proc in tree[1:]:  # freeze the ranks first, so none starts a new step meanwhile
        _signal(proc, signal.SIGSTOP)
    for proc in tree[1:]:
        _signal(proc, signal.SIGTERM)
        _signal(proc, signal.SIGCONT)
    try:
        os.killpg(handle.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    _, alive = psutil.wait_procs(tree, timeout=grace_s)
    for proc in alive:
        _signal(proc, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=5)
    handle.wait()


def _signal(proc: Any, sig: int) -> None:
    import psutil

    try:
        proc.send_signal(sig)
    except psutil.NoSuchProcess:
        pass
