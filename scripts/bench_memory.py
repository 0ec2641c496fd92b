"""Benchmark stages with freed memory kept for reuse (``rlvr.runs.memory``) against glibc's defaults.

python scripts/bench_memory.py                 # SFT 120 steps and 2 agent GRPO steps, 2 pairs (~12 min)
python scripts/bench_memory.py --pairs 3

Runs real stages of ``experiment=tiny_study`` on one thread, each in its own process, with
``RLVR_KEEP_FREED_MEMORY=0`` (the baseline) and ``=1``, alternating which goes first, and
prints each stage's median process wall time, its minor page faults and the ratio. The GRPO
stage starts from the untrained embedded model, so its agent episodes run their whole budget.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = {
    "sft": ["rlvr.sft", "sft.max_steps=120", "sft.save_steps=0"],
    "grpo-agent": ["rlvr.train", "domains=[agent]", "trainer.max_steps=2", "trainer.save_steps=0"],
}


def run(stage: str, keep: bool, out: Path) -> tuple[float, int]:
    """(wall seconds, minor page faults) of one stage process."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_KEEP_FREED_MEMORY": "1" if keep else "0",
    }
    entry, *overrides = STAGES[stage]
    folder = out / f"{stage}-{int(keep)}-{time.monotonic_ns()}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            entry,
            "experiment=tiny_study",
            "logger=none",
            "eval.in_run=false",
            *overrides,
            f"paths.output_root={out}",
            f"hydra.run.dir={folder}",
        ],
        cwd=REPO,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for stage in STAGES:
            results: dict[bool, list[tuple[float, int]]] = {False: [], True: []}
            for pair in range(args.pairs):
                for keep in (pair % 2 == 0, pair % 2 == 1):
                    results[keep].append(run(stage, keep, Path(tmp)))
            walls = {k: statistics.median(w for w, _ in v) for k, v in results.items()}
            faults = {k: statistics.median(f for _, f in v) for k, v in results.items()}
            print(
                f"{stage:10s} glibc defaults {walls[False]:6.1f} s, {faults[False]:>9,.0f} faults | "
                f"freed memory kept {walls[True]:6.1f} s, {faults[True]:>9,.0f} faults | "
                f"{walls[False] / walls[True]:.3f}x"
            )


if __name__ == "__main__":
    main()
