"""Two real GRPO processes (``accelerate launch`` with conf/accelerate/cpu_fsdp2.yaml, gloo on
CPU) from the SFT fixture: they learn, shard the data, and resume after SIGKILL exactly.

accelerate applies the config's FSDP section only on accelerator devices: on a CPU-only host
the two ranks train data-parallel (``MULTI_CPU``: replicated weights, gradients all-reduced
over gloo). FSDP2 sharding proper runs where there are GPUs (conf/accelerate/gpu_fsdp2.yaml).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_train import weights

from rlvr.training.checkpoints import is_complete, latest_complete_checkpoint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LAUNCH = [
    sys.executable,
    "-m",
    "accelerate.commands.launch",
    "--config_file",
    str(REPO / "conf/accelerate/cpu_fsdp2.yaml"),
]
PROMPTS = 4  # per step: 4 prompts x 8 completions, two whole groups on each rank
OVERRIDES = [
    "experiment=smoke",
    "logger=none",
    "sft=none",
    "mixture.train_size=64",
    "mixture.heldout_size=0",
    f"algo.prompts_per_step={PROMPTS}",
    "algo.num_generations=8",
    "algo.max_completion_length=32",
    "trainer.verifier_workers=1",
]


def launch_env(cache: Path) -> dict[str, str]:
    """Offline, untracked, one OpenMP thread per rank, the shared model cache."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_CACHE": str(cache),
        "OMP_NUM_THREADS": "1",
    }


def start(output_root: Path, cache: Path, *extra: str) -> subprocess.Popen:
    env = launch_env(cache)
    log = (output_root.parent / f"{output_root.name}.log").open("a")
    return subprocess.Popen(
        [*LAUNCH, "-m", "rlvr.train", *OVERRIDES, f"paths.output_root={output_root}", *extra],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # one process group: the launcher, both ranks, their workers
    )


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``, from the parent links in /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def signal_all(pids: set[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the launcher and every process under it, as a lost node would. torch's launcher
    starts each rank in a session of its own (and the verifier pool its workers), so killing
    the launcher's process group alone leaves both ranks training into the run folder.
    Everything is stopped first, until no new process appears, so nothing forks past us."""
    tree = {proc.pid}
    while True:
        signal_all(tree, signal.SIGSTOP)
        grown = tree | descendants(proc.pid) | {d for p in tree for d in descendants(p)}
        if grown == tree:
            break
        tree = grown
    signal_all(tree, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (alive := {p for p in tree if _running(p)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, f"processes survived SIGKILL: {sorted(alive)}"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's reaping is left


def finish(proc: subprocess.Popen, output_root: Path, timeout: float = 600) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise
    log = (output_root.parent / f"{output_root.name}.log").read_text()
    assert code == 0, log[-4000:]


def run_dir(output_root: Path) -> Path:
    (folder,) = [p.parent for p in output_root.glob("*/*/config.yaml")]
    return folder


def data_ids(folder: Path) -> list[tuple[int, int, list[str]]]:
    """(step, rank, prompt ids) in the order the ranks appended them."""
    path = folder / "checkpoints" / "data_ids.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["step"], r["rank"], r["ids"]) for r in rows]


def by_step(rows: list[tuple[int, int, list[str]]]) -> dict[int, dict[int, list[str]]]:
    steps: dict[int, dict[int, list[str]]] = {}
    for step, rank, ids in rows:
        steps.setdefault(step, {})[rank] = ids
    return steps


def step_metrics(folder: Path) -> list[dict]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [m for m in map(json.loads, lines) if "grad_norm" in m]


def test_two_processes_from_sft_learn_on_sharded_data(tmp_path, rlvr_cache, sft_checkpoint):
    steps = 3
    root = tmp_path / "run"
    extra = [f"init_from={sft_checkpoint}", f"trainer.max_steps={steps}", "algo.learning_rate=1e-3"]
    finish(start(root, rlvr_cache, *extra, f"trainer.save_steps={steps}"), root)
    folder = run_dir(root)

    summary = json.loads((folder / "summary.json").read_text())
    assert summary["compute"]["processes"] == 2 and summary["rl"]["steps"] == steps
    assert summary["rl"]["distributed_type"] in ("MULTI_CPU", "FSDP"), summary["rl"]
    if summary["rl"]["distributed_type"] == "MULTI_CPU":  # data parallel: our sampler on each rank
        assert summary["rl"]["generation"]["sampler"] == "kv-cache", summary["rl"]["generation"]
    # each rank trains on its own prompts: together they cover the step's whole batch
    seen = by_step(data_ids(folder))
    assert sorted(seen) == list(range(1, steps + 1))
    for step, ranks in seen.items():
        assert sorted(ranks) == [0, 1], (step, ranks)
        assert len(set(ranks[0]) | set(ranks[1])) == PROMPTS, (step, ranks)

    # a learning signal: groups with mixed rewards, hence a nonzero gradient
    logged = step_metrics(folder)
    assert [m["step"] for m in logged] == list(range(1, steps + 1))
    assert all(math.isfinite(m["grad_norm"]) and math.isfinite(m["loss"]) for m in logged)
    assert max(m["reward_std"] for m in logged) > 0, logged
    assert max(m["grad_norm"] for m in logged) > 0, logged

    # the weights moved from the SFT weights this run started from (Adam steps are ~lr)
    start_w, final_w = weights(sft_checkpoint), weights(folder / "final")
    assert start_w.keys() == final_w.keys()
    assert all(torch.isfinite(t).all() for t in final_w.values())
    moved = max((final_w[k] - start_w[k]).abs().max().item() for k in start_w)
    assert moved > 1e-4, moved
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder / "final")  # the saved model loads
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert is_complete(folder / "checkpoints" / f"checkpoint-{steps}")


MAX_STEPS = 4
KILL_AFTER = 2


def wait_for_checkpoint(output_root: Path, step: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 480
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        for ckpt in output_root.glob(f"*/*/checkpoints/checkpoint-{step}"):
            if is_complete(ckpt):
                return
        time.sleep(0.05)
    kill(proc)
    raise AssertionError(f"no complete checkpoint-{step} within the deadline")


def test_two_processes_killed_and_resumed_see_the_same_steps_and_data(tmp_path, rlvr_cache, sft_checkpoint):
    """SIGKILL of the whole launcher group after a checkpoint, then ``resume=true`` in the
    same folder: the (step, rank, prompt ids) stream and the step count equal an
    uninterrupted run's. Weights are compared bit for bit: both ranks reload their own RNG
    state and gloo's all-reduce of two ranks sums in a fixed order."""
    extra = [
        f"init_from={sft_checkpoint}",
        f"trainer.max_steps={MAX_STEPS}",
        "trainer.save_steps=1",
        "trainer.save_total_limit=10",
        "algo.learning_rate=3e-4",
    ]
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"
    finish(start(straight_root, rlvr_cache, *extra), straight_root)
    expected = by_step(data_ids(run_dir(straight_root)))
    assert sorted(expected) == list(range(1, MAX_STEPS + 1))
    assert all(sorted(ranks) == [0, 1] for ranks in expected.values())
    logged = step_metrics(run_dir(straight_root))
    assert any(m["grad_norm"] > 0 for m in logged), "no update to compare"

    proc = start(broken_root, rlvr_cache, *extra)
    wait_for_checkpoint(broken_root, KILL_AFTER, proc)
    kill(proc)
    folder = run_dir(broken_root)
    resume_from = latest_complete_checkpoint(folder / "checkpoints")
    assert resume_from is not None
    done = int(resume_from.name.split("-")[1])
    assert KILL_AFTER <= done < MAX_STEPS, "the kill must land before the end"
    assert not (folder / "final").exists()
    before = data_ids(folder)

    finish(start(broken_root, rlvr_cache, *extra, "resume=true"), broken_root)
    assert run_dir(broken_root) == folder, "resume=true must reuse the same run folder"
    after = by_step(data_ids(folder)[len(before) :])
    assert sorted(after) == list(range(done + 1, MAX_STEPS + 1)), "repeated or skipped steps"
    stitched = {s: r for s, r in by_step(before).items() if s <= done}
    assert sorted(stitched) == list(range(1, done + 1))
    assert {**stitched, **after} == expected

    summary = json.loads((folder / "summary.json").read_text())
    assert summary["rl"]["steps"] == MAX_STEPS
    state = json.loads((folder / "checkpoints" / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == MAX_STEPS
    straight_w, resumed_w = weights(run_dir(straight_root) / "final"), weights(folder / "final")
    assert straight_w.keys() == resumed_w.keys()
    differ = [k for k in straight_w if not torch.equal(straight_w[k], resumed_w[k])]
    assert not differ, differ[:5]
