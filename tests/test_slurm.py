"""The study's SLURM path against a real one-node cluster (slurmctld, slurmd and munged started
by the ``slurm_cluster`` fixture): the cluster itself, a failed and a cancelled job stopping
only their dependents, ``study.cancel``, and a Hydra sweep through the submitit launcher. The
reduced study through SLURM (requeue, driver killed and followed) is in test_study_e2e.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from script_loader import load_script
from test_study_run import fake_stage, run

from rlvr.study import slurm
from rlvr.study.launchers import SubmititLauncher
from rlvr.study.manifest import Manifest
from rlvr.study.progress import closing_screen

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def wait_for(predicate, timeout_s: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_the_local_cluster_runs_jobs_and_stops_only_its_own_daemons(slurm_cluster, tmp_path):
    out = tmp_path / "hello.txt"
    job = subprocess.run(
        ["sbatch", "--parsable", "-o", str(out), "--wrap", "echo $SLURM_JOB_ID"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    wait_for(lambda: slurm.job_states([job]).get(job) == "COMPLETED", what="the job")
    assert out.read_text().strip() == job
    local = load_script("local_slurm")  # a second cluster beside the session's, stopped
    second = tmp_path / "second"
    local.start(second)
    pids = json.loads((second / "pids.json").read_text())
    session = json.loads((slurm_cluster / "pids.json").read_text())
    local.stop(second)
    assert not any(local._alive(p) for p in pids.values())
    assert all(local._alive(p) for p in session.values())


def test_a_failed_or_cancelled_job_stops_only_its_dependents(slurm_cluster, tmp_path):
    """a -> b (exits 1) -> d; a -> c -> d; f (sleeps, then scancel'd by hand) -> g; e alone."""
    root = tmp_path / "study"
    jobs = [
        fake_stage(root, "a"),
        fake_stage(root, "b", deps=["a"], code=1),
        fake_stage(root, "c", deps=["a"]),
        fake_stage(root, "d", deps=["b", "c"]),
        fake_stage(root, "e"),
        fake_stage(root, "f", seconds=300),
        fake_stage(root, "g", deps=["f"]),
    ]
    launcher = SubmititLauncher(root, "slurm", 1, {"slurm_time": 10}, {})

    def cancel_f_once_running() -> None:
        manifest = root / "study.json"
        wait_for(
            lambda: manifest.is_file() and json.loads(manifest.read_text())["stages"]["f"].get("job_id"),
            what="f submitted",
        )
        job = str(json.loads(manifest.read_text())["stages"]["f"]["job_id"])
        wait_for(lambda: slurm.job_states([job]).get(job) == "RUNNING", what="f running")
        subprocess.run(["scancel", job], check=True)

    canceller = threading.Thread(target=cancel_f_once_running)
    canceller.start()
    status, manifest = run(root, jobs, launcher)
    canceller.join()
    assert status == {
        "a": "done",
        "b": "failed",
        "c": "done",
        "d": "blocked",
        "e": "done",
        "f": "failed",
        "g": "blocked",
    }
    entries = manifest.entries
    states = slurm.job_states(str(entries[n]["job_id"]) for n in entries)
    assert states[str(entries["d"]["job_id"])] == "CANCELLED"  # its afterok could never hold
    assert states[str(entries["g"]["job_id"])] == "CANCELLED"
    assert entries["f"]["slurm_state"] == "CANCELLED" and entries["a"]["slurm_state"] == "COMPLETED"
    screen = closing_screen(root, [j.stage for j in jobs], status, entries)
    assert f"FAILED f (SLURM job {entries['f']['job_id']} CANCELLED" in screen
    assert f"FAILED b (SLURM job {entries['b']['job_id']} COMPLETED, exit status 1)" in screen
    assert "boom: this stage cannot work" in screen and str(root / "logs" / "b.log") in screen
    assert "not run (an input stage failed): d, g" in screen


def test_study_cancel_scancels_the_jobs_the_folder_lists(slurm_cluster, tmp_path):
    root = tmp_path / "study"
    jobs = [fake_stage(root, "long", seconds=300), fake_stage(root, "after", deps=["long"])]
    stages = [j.stage for j in jobs]
    manifest = Manifest.create(
        root, {"launcher": "slurm"}, stages, {s.name: "h" for s in stages}, {j.stage.name: j.argv for j in jobs}
    )
    launcher = SubmititLauncher(root, "slurm", 1, {}, {})
    first = launcher.start(jobs[0], [])
    second = launcher.start(jobs[1], [first])
    for name, handle in (("long", first), ("after", second)):
        manifest.update(name, status="running", job_id=handle.job_id)
    ids = [str(first.job_id), str(second.job_id)]
    assert sorted(slurm.cancel_study(root)) == sorted(ids)
    wait_for(lambda: set(slurm.job_states(ids).values()) == {"CANCELLED"}, what="cancelled")
    saved = json.loads((root / "study.json").read_text())["stages"]
    assert {saved[n]["status"] for n in ("long", "after")} == {"cancelled"}
    assert slurm.cancel_study(root) == []  # nothing left to cancel


def test_a_hydra_sweep_runs_each_point_as_a_slurm_job(slurm_cluster, tmp_path, sft_checkpoint):
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "rlvr.train",
        "-m",
        "hydra/launcher=submitit_slurm",
        "experiment=smoke",
        "logger=none",
        "sft=none",
        f"init_from={sft_checkpoint}",
        "mixture.train_size=16",
        "mixture.heldout_size=0",
        "trainer.max_steps=2",
        "trainer.save_steps=0",
        "trainer.verifier_workers=1",
        "trainer.seed=0,1",
        f"hydra.sweep.dir={sweep}",
        "hydra.launcher.gpus_per_node=null",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=null",
        "hydra.launcher.timeout_min=30",
    ]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    summaries = sorted(sweep.glob("*/summary.json"))  # one run folder per point
    assert len(summaries) == 2, summaries
    assert {json.loads(p.read_text())["rl"]["steps"] for p in summaries} == {2}
    tasks = [p.name for p in (sweep / ".submitit").iterdir() if p.is_dir() and "_" in p.name]
    assert len(tasks) == 2, tasks  # one SLURM array job, a task per point
    array = tasks[0].split("_")[0]

    def states() -> list[str]:
        return sorted(
            subprocess.run(
                ["squeue", "-h", "-t", "all", "-o", "%i|%T", "-j", array], capture_output=True, text=True
            ).stdout.split()
        )

    # the results are written a moment before each job ends
    wait_for(lambda: states() == sorted(f"{t}|COMPLETED" for t in tasks), 60, "COMPLETED")
