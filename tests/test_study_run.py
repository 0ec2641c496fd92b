"""Running a plan: real processes through the local and submitit launchers, dependencies,
failures, done markers, the manifest, reruns and stale outputs (stages are short scripts)."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from rlvr.config import ConfigError
from rlvr.study.launchers import StageJob, SubmititLauncher
from rlvr.study.local_launcher import LocalLauncher
from rlvr.study.manifest import Manifest, marker_path, reconcile
from rlvr.study.plan import Stage
from rlvr.study.progress import Progress, closing_screen
from rlvr.study.scheduler import run_stages

SCRIPT = """
import json, pathlib, sys, time
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
(out / "start").write_text(repr(time.time()))
time.sleep(float(sys.argv[2]))
print("working on", out.name)
if sys.argv[3] != "0":
    print("boom: this stage cannot work", flush=True)
    sys.exit(int(sys.argv[3]))
if sys.argv[4] == "1":
    (out / "result.txt").write_text("ok")
(out / "end").write_text(repr(time.time()))
"""


def fake_stage(root: Path, name: str, deps=(), seconds=0.5, code=0, writes=True) -> StageJob:
    out = root / name
    stage = Stage(name, "fake", "fake", (), tuple(deps), out, (out / "result.txt",))
    argv = [sys.executable, "-c", SCRIPT, str(out), str(seconds), str(code), str(int(writes))]
    return StageJob(root, stage, f"hash-{name}", argv, {}, str(root))


def run(root: Path, jobs: list[StageJob], launcher, reuse=(), stale=None, poll_s=0.1):
    stages = [j.stage for j in jobs]
    manifest = Manifest.create(
        root,
        {"test": True},
        stages,
        {j.stage.name: j.config_hash for j in jobs},
        {j.stage.name: j.argv for j in jobs},
    )
    status = run_stages(
        stages,
        {j.stage.name: j for j in jobs},
        launcher,
        manifest,
        list(reuse),
        stale or {},
        Progress(stages, io.StringIO()),
        poll_s=poll_s,
    )
    return status, manifest


def times(root: Path, name: str) -> tuple[float, float]:
    return float((root / name / "start").read_text()), float((root / name / "end").read_text())


def diamond(root: Path) -> list[StageJob]:
    return [
        fake_stage(root, "a"),
        fake_stage(root, "b", ["a"], seconds=1.5),
        fake_stage(root, "c", ["a"], seconds=1.5),
        fake_stage(root, "d", ["b", "c"]),
    ]


def check_diamond_order(root: Path, parallel: bool) -> None:
    a, b, c, d = (times(root, n) for n in "abcd")
    assert b[0] >= a[1] and c[0] >= a[1]  # after their input
    assert d[0] >= max(b[1], c[1])
    if parallel:
        assert b[0] < c[1] and c[0] < b[1]  # overlapped: two at once


def test_local_launcher_runs_dependencies_first_and_two_at_once(tmp_path):
    status, manifest = run(tmp_path, diamond(tmp_path), LocalLauncher(jobs=2))
    assert status == dict.fromkeys("abcd", "done")
    check_diamond_order(tmp_path, parallel=True)
    saved = json.loads((tmp_path / "study.json").read_text())["stages"]
    for name in "abcd":
        assert saved[name]["status"] == "done" and saved[name]["returncode"] == 0
        assert saved[name]["wall_s"] > 0 and saved[name]["device_s"] > 0
        assert json.loads(marker_path(tmp_path, name).read_text())["hash"] == f"hash-{name}"
        assert f"working on {name}" in (tmp_path / "logs" / f"{name}.log").read_text()


def test_one_job_runs_stages_one_at_a_time(tmp_path):
    status, _ = run(tmp_path, diamond(tmp_path), LocalLauncher(jobs=1))
    assert set(status.values()) == {"done"}
    b, c = times(tmp_path, "b"), times(tmp_path, "c")
    assert b[1] <= c[0] or c[1] <= b[0]


def test_a_failure_stops_its_dependents_and_lets_independent_stages_finish(tmp_path):
    jobs = [
        fake_stage(tmp_path, "train", code=3),
        fake_stage(tmp_path, "merge", ["train"]),
        fake_stage(tmp_path, "eval-merge", ["merge"]),
        fake_stage(tmp_path, "eval-base", seconds=1.0),
    ]
    status, manifest = run(tmp_path, jobs, LocalLauncher(jobs=2))
    assert status == {
        "train": "failed",
        "merge": "blocked",
        "eval-merge": "blocked",
        "eval-base": "done",
    }
    assert not (tmp_path / "merge").exists()  # never started
    screen = closing_screen(tmp_path, [j.stage for j in jobs], status, manifest.entries)
    assert "FAILED train (exit status 3)" in screen
    assert str(tmp_path / "logs" / "train.log") in screen
    assert "boom: this stage cannot work" in screen  # the log's tail
    assert "not run (an input stage failed): merge, eval-merge" in screen


def test_exit_zero_with_incomplete_outputs_is_a_failure(tmp_path):
    status, manifest = run(tmp_path, [fake_stage(tmp_path, "x", writes=False)], LocalLauncher(1))
    assert status == {"x": "failed"}
    assert not marker_path(tmp_path, "x").exists()
    assert "outputs are incomplete" in (tmp_path / "logs" / "x.log").read_text()


def test_a_rerun_skips_done_stages_and_reruns_stale_ones(tmp_path):
    jobs = diamond(tmp_path)
    hashes = {j.stage.name: j.config_hash for j in jobs}
    run(tmp_path, jobs, LocalLauncher(jobs=2))
    first = {n: times(tmp_path, n) for n in "abcd"}
    again = reconcile(tmp_path, [j.stage for j in jobs], hashes, force=False)
    assert set(again.reuse) == set("abcd") and again.stale == {}
    # c's config changed (and so d's hash, which includes c's): both rerun, a and b do not
    changed = {**hashes, "c": "hash-c2", "d": "hash-d2"}
    plan = reconcile(tmp_path, [j.stage for j in jobs], changed, force=False)
    assert set(plan.reuse) == {"a", "b"}
    assert plan.stale == {"c": "its config changed", "d": "dependency c changed"}
    jobs[2].config_hash, jobs[3].config_hash = "hash-c2", "hash-d2"
    status, _ = run(tmp_path, jobs, LocalLauncher(jobs=2), plan.reuse, plan.stale)
    assert status == {"a": "skipped", "b": "skipped", "c": "done", "d": "done"}
    assert times(tmp_path, "a") == first["a"] and times(tmp_path, "c") != first["c"]


BUSY = """
import pathlib, subprocess, sys, time
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
burn = "import time\\nend = time.process_time() + 0.6\\nwhile time.process_time() < end: pass"
subprocess.run([sys.executable, "-c", burn], check=True)  # a worker the stage waits for
time.sleep(0.5)
(out / "result.txt").write_text("ok")
"""


def test_a_stage_records_the_cpu_seconds_of_its_process_tree(tmp_path):
    stage = Stage("busy", "fake", "fake", (), (), tmp_path / "busy", (tmp_path / "busy" / "result.txt",))
    job = StageJob(tmp_path, stage, "hash-busy", [sys.executable, "-c", BUSY, str(stage.out_dir)])
    status, manifest = run(tmp_path, [job], LocalLauncher(jobs=1))
    entry = manifest.entries["busy"]
    assert status == {"busy": "done"}
    # the worker's 0.6 s count (a waited-for child), the 0.5 s asleep do not
    assert 0.6 <= entry["cpu_s"] < entry["wall_s"] - 0.4
    assert json.loads((tmp_path / "study.json").read_text())["stages"]["busy"]["cpu_s"] == entry["cpu_s"]


def test_a_partial_run_with_another_config_is_not_resumed(tmp_path):
    job = fake_stage(tmp_path, "x")
    job.prepare()  # started with hash-x, killed before it finished
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "checkpoint").write_text("old")
    plan = reconcile(tmp_path, [job.stage], {"x": "hash-new"}, force=False)
    assert plan.stale == {"x": "its config changed"}


def test_a_folder_of_a_different_plan_is_refused_with_the_difference(tmp_path):
    jobs = diamond(tmp_path)
    run(tmp_path, jobs, LocalLauncher(jobs=2))
    other = [fake_stage(tmp_path, "a"), fake_stage(tmp_path, "e", ["a"])]
    hashes = {j.stage.name: j.config_hash for j in other}
    with pytest.raises(ConfigError) as err:
        reconcile(tmp_path, [j.stage for j in other], hashes, force=False)
    text = str(err.value)
    assert "different study plan" in text and "b, c, d" in text and "study.force=true" in text
    assert "planned here, not there: e" in text
    forced = reconcile(tmp_path, [j.stage for j in other], hashes, force=True)
    assert forced.reuse == ("a",)
    assert (tmp_path / "b" / "result.txt").is_file()  # the other plan's outputs stay on disk


def test_submitit_local_executor_runs_real_jobs_with_dependencies_honoured(tmp_path):
    launcher = SubmititLauncher(tmp_path, "local", jobs=2, params={"timeout_min": 5})
    started = time.time()
    status, manifest = run(tmp_path, diamond(tmp_path), launcher)
    assert status == dict.fromkeys("abcd", "done"), (tmp_path / "logs" / "a.log").read_text()
    check_diamond_order(tmp_path, parallel=False)
    assert times(tmp_path, "a")[0] >= started
    assert list((tmp_path / ".submitit").iterdir())  # submitit's own job folders
    for name in "abcd":  # the job itself wrote its marker after checking its outputs
        assert json.loads(marker_path(tmp_path, name).read_text())["hash"] == f"hash-{name}"


def test_submitit_failure_blocks_dependents(tmp_path):
    launcher = SubmititLauncher(tmp_path, "local", jobs=2, params={"timeout_min": 5})
    jobs = [fake_stage(tmp_path, "a", code=5), fake_stage(tmp_path, "b", ["a"])]
    status, manifest = run(tmp_path, jobs, launcher)
    assert status == {"a": "failed", "b": "blocked"}
    assert manifest.entries["a"]["returncode"] == 5


def test_a_missing_input_names_the_stage_that_makes_it(tmp_path):
    jobs = [fake_stage(tmp_path, "sft"), fake_stage(tmp_path, "expert", ["sft"])]
    hashes = {j.stage.name: j.config_hash for j in jobs}
    run(tmp_path, jobs[:1], LocalLauncher(jobs=1))
    (tmp_path / "sft" / "result.txt").unlink()  # deleted by hand after the stage finished
    status, manifest = run(tmp_path, jobs, LocalLauncher(jobs=1), reuse=["sft"])
    assert status == {"sft": "skipped", "expert": "failed"}
    screen = closing_screen(tmp_path, [j.stage for j in jobs], status, manifest.entries)
    assert "FAILED expert: input" in screen and "stage sft makes it" in screen
    # and the next reconcile no longer counts sft as done: it reruns
    assert "sft" not in reconcile(tmp_path, [j.stage for j in jobs], hashes, False).reuse


def test_slurm_submissions_carry_afterok_dependencies_and_the_accelerate_command(tmp_path, monkeypatch):
    """submitit's real SLURM executor against a stand-in ``sbatch`` that records what it gets:
    the GPU study's scripts (8 GPUs per node, a GPU partition, none for a merge), which the
    one-node CPU cluster of tests/test_slurm.py cannot run. Dependencies, failures, requeue and
    following jobs after the driver died are tested there, on real daemons."""
    import pickle

    from rlvr.study.__main__ import plan
    from rlvr.study.commands import processes

    bin_dir, record = tmp_path / "bin", tmp_path / "submitted"
    bin_dir.mkdir()
    record.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(
        f'#!/bin/sh\nn=$(ls {record} | wc -l)\nid=$((1000 + n))\ncp "$1" {record}/$id.sh\n'
        'echo "Submitted batch job $id"\n'
    )
    sbatch.chmod(0o755)
    (bin_dir / "srun").write_text('#!/bin/sh\nexec "$@"\n')  # submitit looks for srun first
    (bin_dir / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    root = tmp_path / "study"
    planned = plan(["experiment=m2rl_study", f"study.out_dir={root}", "study.slurm.slurm_partition=gpu"])
    run_cfg, stages, hashes, commands = (
        planned.run,
        planned.stages,
        planned.hashes,
        planned.commands,
    )
    launcher = SubmititLauncher(root, "slurm", 1, run_cfg.study.slurm, run_cfg.study.slurm_by_kind)
    assert launcher.submits_ahead
    by_name = {s.name: s for s in stages}
    handles = {}
    for name in ("sft", "expert-math-seed0", "merge-ties-seed0"):
        stage = by_name[name]
        job = StageJob(root, stage, hashes[name], commands[name], {}, str(root), processes(stage, "gpu_fsdp2"))
        handles[name] = launcher.start(job, [handles[d] for d in stage.deps if d in handles])
    first, second = (record / f"{handles[n].job_id}.sh" for n in ("sft", "expert-math-seed0"))
    assert "--dependency" not in first.read_text()
    text = second.read_text()
    assert f"#SBATCH --dependency=afterok:{handles['sft'].job_id}" in text
    assert "#SBATCH --partition=gpu" in text and "#SBATCH --gpus-per-node=8" in text
    assert "#SBATCH --job-name=expert-math-seed0" in text
    merge = (record / f"{handles['merge-ties-seed0'].job_id}.sh").read_text()
    assert "--gpus-per-node" not in merge or "--gpus-per-node=0" in merge  # a merge needs no GPU
    assert f"afterok:{handles['expert-math-seed0'].job_id}" in merge
    pickled = next((root / ".submitit").glob(f"{handles['expert-math-seed0'].job_id}/*_submitted.pkl"))
    submitted = pickle.loads(pickled.read_bytes())
    argv = submitted.function.argv
    assert "accelerate.commands.launch" in argv and "resume=true" in argv  # requeue resumes
    assert submitted.function.processes == 8
    assert hasattr(submitted.function, "checkpoint")  # submitit requeues it on preemption


RANKS_SCRIPT = """
import pathlib, subprocess, sys, time
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
beat = "import pathlib, sys, time\\nwhile True:\\n\
    pathlib.Path(sys.argv[1]).write_text(repr(time.time())); time.sleep(0.05)"
ranks = [subprocess.Popen([sys.executable, "-c", beat, str(out / f"rank{i}")],
                          start_new_session=True) for i in range(2)]
(out / "pids").write_text(" ".join(str(r.pid) for r in ranks))
time.sleep(600)
"""


def test_cancel_stops_ranks_that_left_the_stage_session(tmp_path):
    """Like accelerate launch: ranks in sessions of their own must die with their stage."""
    import os
    import subprocess

    out = tmp_path / "train"
    stage = Stage("train", "fake", "fake", (), (), out, (out / "result.txt",))
    argv = [sys.executable, "-c", RANKS_SCRIPT, str(out)]
    job = StageJob(tmp_path, stage, "hash-train", argv, {}, str(tmp_path))
    launcher = LocalLauncher(jobs=1)
    handle = launcher.start(job, [])
    deadline = time.monotonic() + 60
    while not ((out / "rank0").exists() and (out / "rank1").exists()):
        assert time.monotonic() < deadline and handle.poll() is None, "ranks never started"
        time.sleep(0.05)
    pids = [int(p) for p in (out / "pids").read_text().split()]
    assert all(os.getsid(p) == p for p in pids)  # outside the stage's process group
    launcher.cancel(handle)
    assert handle.poll() is not None
    for pid in pids:
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
        assert state.stdout.strip() in ("", "Z"), f"rank {pid} outlived its stage"
    beats = [(out / f"rank{i}").read_text() for i in range(2)]
    time.sleep(0.3)
    assert beats == [(out / f"rank{i}").read_text() for i in range(2)]  # nobody writes any more


DRIVER = """
import pathlib, sys, time
from rlvr.study.launchers import StageJob
from rlvr.study.local_launcher import LocalLauncher
from rlvr.study.plan import Stage
root = pathlib.Path(sys.argv[1])
stage = Stage("long", "fake", "fake", (), (), root / "long", ())
code = "import os, pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text(str(os.getpid())); time.sleep(120)"
argv = [sys.executable, "-c", code, str(root / "pid")]
LocalLauncher(jobs=1).start(StageJob(root, stage, "h", argv, {}, str(root)), [])
time.sleep(120)
"""


def test_a_killed_driver_takes_its_running_stages_with_it(tmp_path):
    """SIGKILL of the study's own process (a closed terminal, a preempted login node) leaves
    no stage running on: each stage dies with its parent, so a rerun does not race orphans."""
    import os
    import signal
    import subprocess

    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)])
    deadline = time.monotonic() + 60
    while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
        assert time.monotonic() < deadline and driver.poll() is None, "the stage never started"
        time.sleep(0.05)
    stage_pid = int((tmp_path / "pid").read_text())
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while alive(stage_pid):
        assert time.monotonic() < deadline, "the stage outlived its killed driver"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_the_largest_ready_stage_starts_first_and_equal_ones_in_plan_order(tmp_path):
    """The longest arm (the mixed one) must not be the last to begin, or it alone sets the
    study's wall time; stages of equal size keep the plan's order."""
    from dataclasses import replace

    sizes = {"small": 10, "first_zero": 0, "large": 1000, "second_zero": 0, "medium": 100}
    jobs = []
    for name, work in sizes.items():
        job = fake_stage(tmp_path, name, seconds=0.2)
        jobs.append(replace(job, stage=replace(job.stage, work=work)))
    status, _ = run(tmp_path, jobs, LocalLauncher(jobs=1))
    assert set(status.values()) == {"done"}
    started = sorted(sizes, key=lambda n: times(tmp_path, n)[0])
    assert started == ["large", "medium", "small", "first_zero", "second_zero"]


def test_an_evaluation_of_weights_a_running_stage_evaluates_waits_for_it(tmp_path):
    """Two folders holding equal weights are evaluated one after the other (the second then
    reuses the first's records); an evaluation of other weights runs beside the first."""
    from dataclasses import replace

    folders = {}
    for name, content in (("w1", b"same"), ("w2", b"same"), ("w3", b"other")):
        folders[name] = tmp_path / "models" / name
        folders[name].mkdir(parents=True)
        (folders[name] / "model.safetensors").write_bytes(content)
    (folders["w2"] / "merge.json").write_text("{}")  # provenance differs, weights do not
    jobs = []
    for name, weights in (("e1", "w1"), ("e2", "w2"), ("e3", "w3")):
        job = fake_stage(tmp_path, name, seconds=1.0)
        jobs.append(replace(job, stage=replace(job.stage, weights=folders[weights])))
    status, _ = run(tmp_path, jobs, LocalLauncher(jobs=2))
    assert set(status.values()) == {"done"}
    e1, e2, e3 = (times(tmp_path, n) for n in ("e1", "e2", "e3"))
    assert e2[0] >= e1[1]  # waited for its twin
    assert e3[0] < e1[1] and e1[0] < e3[1]  # other weights: beside it
