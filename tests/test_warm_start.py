"""Warm stage start (``rlvr/study/warm_start.py``, ``forkserver.py``): stages forked from a
server that imported torch once are still their own processes (session, log, environment,
threads, exit status, CPU seconds), die with the study, and start cold where a fork could
differ."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_study_run import alive, run, times

from rlvr.study.launchers import StageJob
from rlvr.study.local_launcher import LocalLauncher
from rlvr.study.plan import Stage
from rlvr.study.warm_start import WarmProcess, WarmStart

REPO = Path(__file__).resolve().parents[1]


def module_stage(root: Path, name: str, deps=(), seconds=0.3, code=0, mode="", env=None):
    out = root / name
    stage = Stage(name, "fake", "fake", (), tuple(deps), out, (out / "result.txt",))
    argv = [sys.executable, "-m", "tests.support.fake_stage", str(out), str(seconds), str(code), "1", mode]
    return StageJob(root, stage, f"hash-{name}", argv, env or {"OMP_NUM_THREADS": "1"}, str(REPO))


def facts(root: Path, name: str) -> dict:
    return json.loads((root / name / "facts.json").read_text())


@pytest.fixture
def launcher(tmp_path):
    launcher = LocalLauncher(jobs=2, warm=WarmStart(str(tmp_path / "logs")))
    yield launcher
    launcher.close()


def test_warm_stages_run_in_order_each_its_own_process_from_one_server(tmp_path, launcher):
    jobs = [
        module_stage(tmp_path, "a"),
        module_stage(tmp_path, "b", ["a"], seconds=1.5),
        module_stage(tmp_path, "c", ["a"], seconds=1.5),
        module_stage(tmp_path, "d", ["b", "c"]),
    ]
    status, manifest = run(tmp_path, jobs, launcher)
    assert status == dict.fromkeys("abcd", "done")
    a, b, c, d = (times(tmp_path, n) for n in "abcd")
    assert min(b[0], c[0]) >= a[1] and d[0] >= max(b[1], c[1])
    assert b[0] < c[1] and c[0] < b[1]  # two at once
    seen = {n: facts(tmp_path, n) for n in "abcd"}
    server = {f["ppid"] for f in seen.values()}
    assert len(server) == 1 and server != {os.getpid()}  # forked by one server, not the driver
    for name, f in seen.items():
        assert f["torch_loaded"], "the stage imported torch itself: it did not start warm"
        assert f["sid"] == f["pid"]  # its own session, so a cancel reaches its whole tree
        assert f["name"] == "__main__" and f["cwd"] == str(REPO)
        assert f["argv"][0].endswith("fake_stage.py") and f["argv"][1] == str(tmp_path / name)
        assert f["torch_threads"] == int(f["omp"]) == 1
        assert f"working on {name}" in (tmp_path / "logs" / f"{name}.log").read_text()
    assert len({f["pid"] for f in seen.values()}) == 4


def test_exit_codes_tracebacks_and_cpu_seconds_reach_the_study(tmp_path, launcher):
    jobs = [
        module_stage(tmp_path, "fails", code=3),
        module_stage(tmp_path, "raises", mode="raise"),
        module_stage(tmp_path, "busy", seconds=0.5, mode="busy"),
    ]
    status, manifest = run(tmp_path, jobs, launcher)
    assert status == {"fails": "failed", "raises": "failed", "busy": "done"}
    assert manifest.entries["fails"]["returncode"] == 3
    assert manifest.entries["raises"]["returncode"] == 1
    log = (tmp_path / "logs" / "raises.log").read_text()
    assert "Traceback" in log and "RuntimeError: this stage raised" in log
    busy = manifest.entries["busy"]
    assert 0.6 <= busy["cpu_s"] < busy["wall_s"] - 0.4  # the worker's CPU, not the sleep


def test_stages_that_could_differ_when_forked_start_cold(tmp_path, launcher):
    """Libraries read some variables at import: a stage with another environment, or a
    command that is not ``python -m`` (accelerate launch), runs as a fresh process."""
    first = module_stage(tmp_path, "first")
    other_env = module_stage(tmp_path, "marked", ["first"], env={"OMP_NUM_THREADS": "1", "FAKE_STAGE_MARK": "x"})
    script = module_stage(tmp_path, "script")
    script.argv = [sys.executable, str(REPO / "tests/support/fake_stage.py"), *script.argv[3:]]
    status, _ = run(tmp_path, [first, other_env, script], launcher)
    assert status == {"first": "done", "marked": "done", "script": "done"}
    assert facts(tmp_path, "first")["torch_loaded"]  # warm: its server has its environment
    for name in ("marked", "script"):
        f = facts(tmp_path, name)
        assert f["ppid"] == os.getpid() and not f["torch_loaded"], name
    assert facts(tmp_path, "marked")["marker"] == "x"


def test_a_warm_stage_computes_bit_for_bit_what_a_fresh_one_does(tmp_path, launcher):
    """Two threads: a multi-threaded backward splits its sums by how OpenMP and MKL were set
    up, so the server must start with the stage's thread settings (setting them in the child
    changed every gradient)."""
    jobs = {}
    for name in ("cold", "warm"):
        out = tmp_path / name
        stage = Stage(name, "fake", "fake", (), (), out, ())
        argv = [sys.executable, "-m", "tests.support.numerics_stage", str(out / "grads.txt")]
        if name == "cold":
            argv = [sys.executable, str(REPO / "tests/support/numerics_stage.py"), argv[-1]]
        threads = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
        jobs[name] = StageJob(tmp_path, stage, name, argv, threads, str(REPO))
    for name, job in jobs.items():
        job.prepare()
        handle = launcher.start(job, [])
        assert isinstance(handle, WarmProcess) == (name == "warm")
        assert handle.wait(timeout=300) == 0, (tmp_path / "logs" / f"{name}.log").read_text()
    cold, warm = ((tmp_path / n / "grads.txt").read_text() for n in ("cold", "warm"))
    assert "threads=2" in cold and cold == warm
    other = module_stage(tmp_path, "one-thread")  # another thread setting: its own server
    other.prepare()
    assert launcher.start(other, []).wait(timeout=300) == 0
    assert len(launcher.warm.servers) == 2


def test_cancel_stops_a_warm_stage_and_the_ranks_it_started(tmp_path, launcher):
    job = module_stage(tmp_path, "train", seconds=600, mode="ranks")
    job.prepare()
    handle = launcher.start(job, [])
    assert isinstance(handle, WarmProcess)
    out = tmp_path / "train"
    deadline = time.monotonic() + 60
    while not ((out / "rank0").exists() and (out / "rank1").exists()):
        assert time.monotonic() < deadline and handle.poll() is None, "ranks never started"
        time.sleep(0.05)
    pids = [int(p) for p in (out / "pids").read_text().split()]
    launcher.cancel(handle)
    assert handle.poll() is not None
    for pid in [handle.pid, *pids]:
        assert not alive(pid), f"{pid} outlived its cancelled stage"


DRIVER = """
import pathlib, sys, time
from rlvr.study.launchers import StageJob
from rlvr.study.local_launcher import LocalLauncher
from rlvr.study.warm_start import WarmStart
from rlvr.study.plan import Stage
root = pathlib.Path(sys.argv[1])
stage = Stage("long", "fake", "fake", (), (), root / "long", ())
argv = [sys.executable, "-m", "tests.support.fake_stage", str(root / "long"), "120", "0", "1"]
launcher = LocalLauncher(1, WarmStart(str(root)))
handle = launcher.start(StageJob(root, stage, "h", argv, {}, sys.argv[2]), [])
(server,) = launcher.warm.servers.values()
(root / "pids").write_text(f"{handle.pid} {server._proc.pid}")
time.sleep(120)
"""


def test_a_killed_driver_takes_the_server_and_its_stages_with_it(tmp_path):
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path), str(REPO)], cwd=REPO)
    deadline = time.monotonic() + 120
    while not (tmp_path / "pids").exists() or not (tmp_path / "long" / "facts.json").exists():
        assert time.monotonic() < deadline and driver.poll() is None, "the stage never started"
        time.sleep(0.05)
    stage_pid, server_pid = (int(p) for p in (tmp_path / "pids").read_text().split())
    assert facts(tmp_path, "long")["ppid"] == server_pid
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while alive(stage_pid) or alive(server_pid):
        assert time.monotonic() < deadline, "the server or its stage outlived the driver"
        time.sleep(0.05)


def test_a_lost_server_fails_its_stages_and_later_ones_start_cold(tmp_path, launcher):
    """The stages a dead server held die with it (they are reported failed, so a rerun runs
    them again); the study goes on with cold starts."""
    job = module_stage(tmp_path, "held", seconds=600)
    job.prepare()
    handle = launcher.start(job, [])
    while not (tmp_path / "held" / "facts.json").exists():
        assert handle.poll() is None
        time.sleep(0.05)
    (server,) = launcher.warm.servers.values()
    os.kill(server._proc.pid, signal.SIGKILL)
    assert handle.wait(timeout=30) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while alive(handle.pid):
        assert time.monotonic() < deadline, "the stage outlived its server"
        time.sleep(0.05)
    status, _ = run(tmp_path, [module_stage(tmp_path, "later")], launcher)
    assert status == {"later": "done"} and facts(tmp_path, "later")["ppid"] == os.getpid()


@pytest.mark.parametrize("warm", [True, False], ids=["forked", "fresh-processes"])
def test_the_next_stage_starts_when_one_ends_not_at_the_next_poll(tmp_path, warm):
    """A chain of three short stages under a 20 s poll interval: each stage starts as its
    input ends (the launcher waits on the server's pipe or the process's pidfd)."""
    launcher = LocalLauncher(jobs=2, warm=WarmStart(str(tmp_path / "logs")) if warm else None)
    jobs = [
        module_stage(tmp_path, "a", seconds=0.2),
        module_stage(tmp_path, "b", ["a"], seconds=0.2),
        module_stage(tmp_path, "c", ["b"], seconds=0.2),
    ]
    try:
        status, _ = run(tmp_path, jobs, launcher, poll_s=20)
    finally:
        launcher.close()
    assert status == dict.fromkeys("abc", "done")
    a, b, c = (times(tmp_path, n) for n in "abc")
    assert b[0] - a[1] < 5 and c[0] - b[1] < 5  # a tick would have been up to 20 s


def test_the_next_thread_settings_server_imports_while_the_first_stage_runs(tmp_path):
    """A two-thread stage, then a one-thread stage after it: the one-thread server starts with
    the study (``warm_up``), so the second stage forks as the first ends instead of waiting
    for its server's imports then."""
    launcher = LocalLauncher(jobs=2, warm=WarmStart(str(tmp_path / "logs")))
    two = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    one = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    jobs = [
        module_stage(tmp_path, "a", seconds=1.0, env=two),
        module_stage(tmp_path, "b", ["a"], seconds=0.2, env=one),
    ]
    began = time.time()
    try:
        status, _ = run(tmp_path, jobs, launcher)
    finally:
        launcher.close()
    assert status == dict.fromkeys("ab", "done")
    a, b = times(tmp_path, "a"), times(tmp_path, "b")
    imports = a[0] - began  # the first server's imports, before stage a could fork
    assert b[0] - a[1] < imports / 2, (imports, b[0] - a[1])
    fa, fb = facts(tmp_path, "a"), facts(tmp_path, "b")
    assert fa["torch_loaded"] and fb["torch_loaded"] and fa["ppid"] != fb["ppid"]
    assert (fa["torch_threads"], fb["torch_threads"]) == (2, 1)
