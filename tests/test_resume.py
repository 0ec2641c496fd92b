"""Resume equivalence: a GRPO run killed with SIGKILL after a checkpoint and resumed with
``resume=true`` trains on the same (step, prompt ids) sequence as an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_lora import guessing_model

from rlvr.training.checkpoints import is_complete, latest_complete_checkpoint

pytestmark = pytest.mark.slow

MAX_STEPS = 6
# 10 rows / 2 prompts per step = 5 steps per epoch: the resume crosses an epoch. Killed after
# checkpoint 2 of 6, so four steps of margin separate the kill from the run's end (steps of
# one-token completions take a fraction of a second).
KILL_AFTER = 2
# A very small policy that guesses two-option science questions (see test_lora), so groups
# have reward variance and every step really updates the weights; one-token answers.
OVERRIDES = [
    "sft=none",
    "logger=none",
    "+mixture.difficulty.science=1",
    "mixture.train_size=10",
    "mixture.heldout_size=0",
    "algo.num_generations=4",
    "algo.max_completion_length=1",
    "algo.learning_rate=1e-3",
    f"trainer.max_steps={MAX_STEPS}",
    "trainer.save_steps=2",
    "trainer.save_total_limit=10",
    "trainer.verifier_workers=1",
]


def launch(
    module: str, args: list[str], output_root: Path, cache: Path, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """``python -m <module> <args>`` offline, one thread, logging to ``<output_root>.log``."""
    env = {
        **os.environ,
        **(env or {}),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_CACHE": str(cache),
        "OMP_NUM_THREADS": "1",
    }
    log = (output_root.parent / f"{output_root.name}.log").open("a")
    return subprocess.Popen(
        [sys.executable, "-m", module, *args, f"paths.output_root={output_root}"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: SIGKILL reaches the verifier workers
    )


def start(output_root: Path, cache: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return launch("rlvr.train", [*OVERRIDES, *extra], output_root, cache, env)


def finish(proc: subprocess.Popen, output_root: Path, timeout: float = 240) -> None:
    code = proc.wait(timeout=timeout)
    log = (output_root.parent / f"{output_root.name}.log").read_text()
    assert code == 0, log[-3000:]


def run_dir(output_root: Path) -> Path:
    (folder,) = [p.parent for p in output_root.glob("*/*/config.yaml")]
    return folder


def records(folder: Path) -> list[dict]:
    path = folder / "checkpoints" / "data_ids.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_checkpoint(output_root: Path, step: int, proc: subprocess.Popen) -> Path:
    """Poll until checkpoint-<step> has a parseable trainer_state.json (written last)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        for state in output_root.glob(f"*/*/checkpoints/checkpoint-{step}/trainer_state.json"):
            try:
                json.loads(state.read_text())
            except ValueError:
                continue  # still being written
            return state.parent
        time.sleep(0.05)
    raise AssertionError(f"no checkpoint-{step} within the deadline")


def kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def final_weights_equal(a: Path, b: Path) -> bool:
    import torch
    from safetensors.torch import load_file

    wa, wb = (load_file(str(f / "final" / "model.safetensors")) for f in (a, b))
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


# (mixture overrides, prompts per step): one domain shuffled as a whole (natural), and
# exact 3:1 quotas over two domains (weighted) whose science pool wraps mid-batch.
MIXTURES = {
    "natural": (["domains=[science]", "algo.prompts_per_step=2"], 2),
    "weighted": (
        [
            "mixture=weighted",
            "domains=[math,science]",
            "domains.science.weight=3",
            "algo.prompts_per_step=4",
        ],
        4,
    ),
}
# How the killed run is restarted: with ``resume=true``, or as SLURM requeues a preempted or
# timed-out job, with the same command line and ``SLURM_RESTART_COUNT`` > 0, where the run
# must resume from its last complete checkpoint without being told (instead of starting over
# in the same folder).
RESTARTS = {"natural": "slurm requeue", "weighted": "resume=true"}


@pytest.mark.parametrize("mixture", sorted(MIXTURES))
def test_killed_and_resumed_run_sees_the_same_steps_and_data(mixture, tmp_path):
    overrides, prompts = MIXTURES[mixture]
    cache = tmp_path / "cache"
    start_model = guessing_model(cache, tmp_path / "start")
    overrides = [*overrides, f"init_from={start_model}"]
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"

    # the uninterrupted run goes beside the one to kill: tests run one at a time
    # on two cores, so each process gets a core of its own
    uninterrupted = start(straight_root, cache, *overrides)
    proc = start(broken_root, cache, *overrides)
    wait_for_checkpoint(broken_root, KILL_AFTER, proc)
    kill(proc)
    finish(uninterrupted, straight_root)
    straight = records(run_dir(straight_root))
    assert [r["step"] for r in straight] == list(range(1, MAX_STEPS + 1))
    expected = {r["step"]: r["ids"] for r in straight}
    assert all(len(ids) == prompts for ids in expected.values())
    metrics = (run_dir(straight_root) / "metrics.jsonl").read_text().splitlines()
    assert any(json.loads(m).get("grad_norm", 0) > 0 for m in metrics), "no update to compare"

    folder = run_dir(broken_root)
    resume_from = latest_complete_checkpoint(folder / "checkpoints")
    assert resume_from is not None and is_complete(resume_from)
    done = int(resume_from.name.split("-")[1])
    assert done >= KILL_AFTER
    before = records(folder)
    assert not (folder / "final").exists(), "the killed run must not have finished"

    if RESTARTS[mixture] == "resume=true":
        finish(start(broken_root, cache, *overrides, "resume=true"), broken_root)
    else:
        requeued = start(broken_root, cache, *overrides, env={"SLURM_RESTART_COUNT": "1"})
        finish(requeued, broken_root)
        log = (tmp_path / "broken.log").read_text()
        assert "SLURM requeued this job (restart 1): resuming" in log
    assert run_dir(broken_root) == folder, "the resumed run must reuse the same run folder"
    after = records(folder)[len(before) :]

    # the resumed process starts right after the checkpoint: nothing repeated, nothing skipped
    assert [r["step"] for r in after] == list(range(done + 1, MAX_STEPS + 1))
    stitched = {r["step"]: r["ids"] for r in before if r["step"] <= done}
    assert sorted(stitched) == list(range(1, done + 1))
    stitched.update({r["step"]: r["ids"] for r in after})
    assert stitched == expected

    # the RNG continued too: same samples, same updates, bit-identical weights (1 thread)
    assert final_weights_equal(run_dir(straight_root), folder)

    summary = json.loads((folder / "summary.json").read_text())
    assert summary["rl"]["steps"] == MAX_STEPS
    state = json.loads((folder / "checkpoints" / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == MAX_STEPS


def test_a_run_killed_after_its_last_checkpoint_resumes_without_another_step(tmp_path):
    """Killed between its last checkpoint and its final model, a run resumed from that
    checkpoint trains nothing more: the final weights are the checkpoint's. (6 steps are not
    whole epochs of 5, where the Trainer on its own would have run a step 7.)"""
    overrides, _ = MIXTURES["natural"]
    cache = tmp_path / "cache"
    overrides = [*overrides, f"init_from={guessing_model(cache, tmp_path / 'start')}"]
    root = tmp_path / "run"
    finish(start(root, cache, *overrides), root)
    folder = run_dir(root)
    (tmp_path / "first").mkdir()
    shutil.move(folder / "final", tmp_path / "first" / "final")
    (folder / "summary.json").unlink()
    before = records(folder)

    finish(start(root, cache, *overrides, "resume=true"), root)
    assert records(folder) == before, "the resumed run generated for a step past max_steps"
    assert final_weights_equal(tmp_path / "first", folder)
    assert json.loads((folder / "summary.json").read_text())["rl"]["steps"] == MAX_STEPS
    assert "holds the last step" in (tmp_path / "run.log").read_text()
