"""SFT resumes like GRPO: an SFT stage killed with SIGKILL after a checkpoint and rerun with
``resume=true`` (as the study reruns it) continues from that checkpoint and ends on the
same weights as an uninterrupted run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_resume import final_weights_equal, kill, launch, wait_for_checkpoint

from rlvr.training.checkpoints import latest_complete_checkpoint

pytestmark = pytest.mark.slow

MAX_STEPS = 24
SAVE_STEPS = 4
OVERRIDES = [
    "experiment=smoke",
    "logger=none",
    "eval.in_run=false",
    f"sft.max_steps={MAX_STEPS}",
    f"sft.save_steps={SAVE_STEPS}",
    "sft.save_total_limit=2",
    "sft.batch_size=8",
    "sft.examples_per_domain=40",
    "mixture.heldout_size=0",
]


def start(output_root: Path, cache: Path, *extra: str) -> subprocess.Popen:
    return launch("rlvr.sft", [*OVERRIDES, *extra], output_root, cache)


def finish(proc: subprocess.Popen, output_root: Path) -> Path:
    code = proc.wait(timeout=300)
    log = (output_root.parent / f"{output_root.name}.log").read_text()
    assert code == 0, log[-3000:]
    (folder,) = [p.parent for p in output_root.glob("*/*/summary.json")]
    return folder


def logged_steps(folder: Path) -> list[int]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines if line.strip()]


def test_a_killed_sft_resumes_from_its_checkpoint_to_the_same_weights(tmp_path, rlvr_cache):
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"
    # the uninterrupted run goes beside the one to kill: tests run one at a time
    # on two cores, so each process gets a core of its own
    uninterrupted = start(straight_root, rlvr_cache)
    proc = start(broken_root, rlvr_cache)
    wait_for_checkpoint(broken_root, SAVE_STEPS, proc)
    kill(proc)
    straight = finish(uninterrupted, straight_root)
    assert latest_complete_checkpoint(straight / "checkpoints").name == f"checkpoint-{MAX_STEPS}"
    (folder,) = [p.parent for p in broken_root.glob("*/*/config.yaml")]
    assert not (folder / "final").exists(), "the killed SFT must not have finished"
    done = int(latest_complete_checkpoint(folder / "checkpoints").name.split("-")[1])
    assert SAVE_STEPS <= done < MAX_STEPS
    before = len(logged_steps(folder))

    resumed = finish(start(broken_root, rlvr_cache, "resume=true"), broken_root)
    assert resumed == folder
    log = (tmp_path / "broken.log").read_text()
    assert f"resuming from {folder / 'checkpoints' / f'checkpoint-{done}'}" in log
    # the second process trained only the steps after the checkpoint
    after = [s for s in logged_steps(folder)[before:] if s > 0]
    assert after and min(after) > done and max(after) == MAX_STEPS
    # data order, optimizer and RNG continued: bit-identical weights (1 thread)
    assert final_weights_equal(straight, folder)
