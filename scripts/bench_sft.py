"""Benchmark SFT's loss over length-sorted chunks against TRL's padded batches.

python scripts/bench_sft.py                  # tiny_study's SFT settings, 120 steps, one thread
python scripts/bench_sft.py --steps 300 --threads 2

Runs ``rlvr.sft`` with ``experiment=tiny_study`` (its demonstrations: short math and code rows,
long agent rows with tool listings; batch 16) for ``--steps`` steps, once with
``sft.trim_padding=true`` and once with TRL's padded batches, each in its own process from the
same seed, and prints the mean step time after the first tenth, the loss each run ends at, and
the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(trim: bool, steps: int, threads: int, out: Path) -> dict[str, float]:
    folder = out / ("chunked" if trim else "padded")
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.sft",
            "experiment=tiny_study",
            "logger=none",
            "eval.in_run=false",
            f"sft.max_steps={steps}",
            "sft.save_steps=0",
            f"sft.trim_padding={str(trim).lower()}",
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
    metrics = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    steps_logged = [m for m in metrics if "time/step_s" in m and "loss" in m]
    timed = steps_logged[max(1, len(steps_logged) // 10) :] or steps_logged
    return {
        "step_s": sum(m["time/step_s"] for m in timed) / len(timed),
        "loss": steps_logged[-1]["loss"],
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        padded = run(False, args.steps, args.threads, Path(tmp))
        chunked = run(True, args.steps, args.threads, Path(tmp))
    for name, m in (("padded (TRL)", padded), ("chunked", chunked)):
        print(f"{name:13s} {m['step_s']:.3f} s/step, last logged loss {m['loss']:.4f}, process {m['wall_s']:.1f} s")
    print(f"SFT step: chunked {padded['step_s'] / chunked['step_s']:.2f}x faster than padded")


if __name__ == "__main__":
    main()
