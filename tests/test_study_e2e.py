"""The study end to end at reduced scale, with real stages: through submitit's local executor
with dependencies honoured, and on a real SLURM cluster with a job requeued during an expert
and its driver killed, ending with the same tables as the uninterrupted study. (A local study
killed mid-stage: its stages die with it, ``tests/test_study_run.py``; a stage rerun resumes
from its checkpoints, ``tests/test_study_arms.py``.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlvr.study.profile import format_profile, one_seed, profile
from rlvr.training.checkpoints import latest_complete_checkpoint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SMALL = [
    "experiment=tiny_study",
    "study.domains=[math,instruction]",
    "study.merges=[ties]",
    "study.evaluate_base=false",
    "study.seeds=[0]",
    "study.stages=[neighbourhood,analyze]",
    "study.arm_overrides.mixed=[]",  # tiny_study gives the mixed arm its own steps and quotas
    "study.poll_s=0.2",
    "sft.max_steps=30",
    "sft.examples_per_domain=200",
    "trainer.max_steps=6",
    "trainer.save_steps=2",
    "eval.max_prompts=6",
    "eval.k=2",
]
TABLES = ("main_table.csv", "merge_table.csv", "diff_table.csv")


def study_cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rlvr.study", *SMALL, f"study.out_dir={out}", *extra]


def run_study(out: Path, *extra: str) -> subprocess.CompletedProcess:
    result = subprocess.run(study_cmd(out, *extra), cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The uninterrupted study, through submitit's local executor (real job processes)."""
    out = tmp_path_factory.mktemp("reference") / "study"
    result = run_study(out, "study.launcher=submitit_local")
    assert "mixed / separate compute" in result.stdout
    return out


def test_submitit_runs_every_stage_after_its_inputs(reference):
    stages = json.loads((reference / "study.json").read_text())["stages"]
    # 12 stages, and the neighbourhood's merge and evaluation of the one pair (math+instruction)
    assert len(stages) == 14 and {e["status"] for e in stages.values()} == {"done"}
    for name, entry in stages.items():
        for dep in entry["deps"]:
            assert entry["start"] >= stages[dep]["end"], f"{name} started before {dep} ended"
        assert Path(entry["log"]).is_file()
    assert (reference / ".submitit").is_dir()
    for table in TABLES:
        assert (reference / "report" / table).is_file()
    for name in (
        "footprint.csv",
        "footprint_jaccard.csv",
        "geometry.csv",
        "geometry.png",
        "consistency.csv",
        "neighbourhood.csv",
        "kl.csv",
        "judge.csv",
        "judge.png",
    ):
        assert (reference / "analysis" / name).is_file(), name
    report = (reference / "report" / "report.md").read_text()
    assert "Analyses of the models" in report and "Self-verification" in report


def test_the_profile_splits_each_stage_wall_into_its_parts(reference):
    profiled = {p.name: p for p in profile(reference)}
    assert set(profiled) == set(json.loads((reference / "study.json").read_text())["stages"])
    mixed = profiled["mixed-seed0"]
    assert {"start-up", "set-up & saves", "generation", "grading", "update"} <= set(mixed.parts)
    assert 0.9 * mixed.wall_s <= sum(mixed.parts.values()) <= mixed.wall_s + 1e-6
    assert profiled["merge-ties-seed0"].parts["start-up"] > profiled["merge-ties-seed0"].parts["merge"]
    table = format_profile(one_seed(profiled.values(), 0))
    assert "| mixed-seed0 |" in table and "| eval (x" in table and "**total**" in table


def test_warm_started_stages_train_and_evaluate_as_fresh_processes_do(reference, tmp_path):
    """The local launcher forks stages from a server that imported torch once: an expert and
    its evaluation rerun that way match the reference's fresh processes bit for bit."""
    import shutil

    from rlvr.study.manifest import marker_path

    out = tmp_path / "study"
    shutil.copytree(reference, out)
    rerun = {"expert-math-seed0": out / "experts" / "math-seed0", "eval-math-seed0": out / "eval" / "math-seed0"}
    for name, folder in rerun.items():
        marker_path(out, name).unlink()
        shutil.rmtree(folder)
    for summary in (out / "eval").glob("*/*.json"):  # the rerun must sample, not copy a twin's
        payload = json.loads(summary.read_text())
        payload.pop("reuse_key", None)
        summary.write_text(json.dumps(payload))
    run_study(out, "study.launcher=local")
    stages = json.loads((out / "study.json").read_text())["stages"]
    assert {n for n, e in stages.items() if e["status"] == "done"} == set(rerun)
    for name in rerun:
        assert "warm start: forked from the stage server" in (out / "logs" / f"{name}.log").read_text()
    weights = "final/model.safetensors"
    assert (out / "experts/math-seed0" / weights).read_bytes() == (
        reference / "experts/math-seed0" / weights
    ).read_bytes()
    for result in sorted((reference / "eval" / "math-seed0").glob("*.json")):
        ours = json.loads((out / "eval" / "math-seed0" / result.name).read_text())
        theirs = json.loads(result.read_text())
        assert comparable(ours, out) == comparable(theirs, reference), result.name


def comparable(payload, root: Path):
    """An evaluation's record without what differs between folders and runs: timings, and the
    study folder inside paths."""
    if isinstance(payload, dict):
        return {  # the reference may have copied an equal model's records (rlvr.evaluation.reuse)
            k: comparable(v, root)
            for k, v in payload.items()
            if not k.endswith(("_s", "seconds")) and k not in ("reuse_key", "reused_from")
        }
    if isinstance(payload, list):
        return [comparable(v, root) for v in payload]
    if isinstance(payload, str):
        return payload.replace(str(root), "<study>")
    return payload


def test_on_slurm_a_requeued_job_resumes_and_a_killed_driver_is_followed(reference, tmp_path, slurm_cluster):
    """Every stage a real SLURM job, submitted at once with afterok dependencies. During the
    math expert's training its job is requeued (``scontrol requeue``, as preemption does) and
    the driver is killed with SIGKILL: the jobs keep running, the rerun follows them instead
    of submitting again, the requeued job resumed from its newest complete checkpoint, and the
    tables equal the uninterrupted study's."""
    from rlvr.study import slurm

    out = tmp_path / "study"
    expert = out / "experts" / "math-seed0"
    proc = subprocess.Popen(
        study_cmd(out, "study.launcher=slurm"), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 900
    while latest_complete_checkpoint(expert / "checkpoints") is None:
        assert proc.poll() is None, "the study ended before the expert saved a checkpoint"
        assert time.time() < deadline
        time.sleep(0.1)
    submitted = json.loads((out / "study.json").read_text())["stages"]
    assert all(e["job_id"] for e in submitted.values())  # all at once: SLURM orders them
    job = str(submitted["expert-math-seed0"]["job_id"])
    subprocess.run(["scontrol", "requeue", job], check=True, capture_output=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (expert / "final" / "config.json").exists(), "requeued too late to test resume"
    states = slurm.job_states(str(e["job_id"]) for e in submitted.values())
    assert slurm.ACTIVE & set(states.values()), states  # the jobs outlived their driver

    result = run_study(out, "study.launcher=slurm")
    assert "following" in result.stdout and "SLURM jobs an earlier run submitted" in result.stdout
    final = json.loads((out / "study.json").read_text())["stages"]
    assert {n: str(e["job_id"]) for n, e in final.items()} == {
        n: str(e["job_id"]) for n, e in submitted.items()
    }  # nothing submitted twice
    assert {e["slurm_state"] for e in final.values()} == {"COMPLETED"}
    log = (out / "logs" / "expert-math-seed0.log").read_text()
    assert "resuming from" in log and "checkpoint-" in log
    for table in TABLES:
        assert (out / "report" / table).read_text() == (reference / "report" / table).read_text()
