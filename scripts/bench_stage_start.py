"""Benchmark warm stage start against fresh processes: the wall of short real stages.

python scripts/bench_stage_start.py              # 3 rounds, one thread
python scripts/bench_stage_start.py --rounds 5

Runs two short stages of ``experiment=tiny_study`` through the study's local launcher, one at
a time, alternating cold (a fresh ``python -m``) and warm (forked from the stage server,
``rlvr/study/forkserver.py``): an evaluation of the embedded base model on 4 math prompts, and
a 1-step math GRPO run from it (no SFT). Their work is a few seconds, so the wall is mostly start-up:
imports, configuration, model loading. Prints each stage's mean wall both ways and the ratio;
the server's own import time (paid once per study) is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rlvr.study.launchers import StageJob  # noqa: E402
from rlvr.study.local_launcher import LocalLauncher  # noqa: E402
from rlvr.study.plan import Stage  # noqa: E402
from rlvr.study.warm_start import ForkServer  # noqa: E402

COMMON = ["experiment=tiny_study", "logger=none", "domains=[math]"]
STAGES = {
    "eval": [
        "rlvr.evaluate",
        'eval.models=["base=tiny"]',
        "eval.tasks=[micro_math]",
        "eval.max_prompts=4",
        "eval.k=1",
        "eval.greedy=false",
    ],
    "grpo": [
        "rlvr.train",
        "trainer.max_steps=1",
        "trainer.save_steps=0",
        "algo.prompts_per_step=2",
        "algo.num_generations=2",
        "algo.max_completion_length=16",
        "eval.in_run=false",
        "sft.enabled=false",
    ],
}


def stage_job(root: Path, kind: str, label: str) -> StageJob:
    out = root / label
    module, *args = STAGES[kind]
    args = [*COMMON, *args, f"run_name={label}", f"paths.output_root={out}", f"hydra.run.dir={out}"]
    if kind == "eval":
        args.append(f"eval.out_dir={out}")
    stage = Stage(label, kind, module, (), (), out, ())
    argv = [sys.executable, "-m", module, *args]
    return StageJob(root, stage, label, argv, {"OMP_NUM_THREADS": "1"}, str(REPO))


def timed(launcher: LocalLauncher, job: StageJob) -> float:
    job.prepare()
    start = time.perf_counter()
    handle = launcher.start(job, [])
    while (code := launcher.poll(handle)) is None:
        time.sleep(0.02)
    if code != 0:
        raise SystemExit(f"{job.stage.name} failed ({code}); see {job.log}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "disabled")
    root = Path(tempfile.mkdtemp(prefix="bench_stage_start_"))
    cold = LocalLauncher(jobs=1)
    warm_server = ForkServer(str(root / "logs" / "forkserver.log"))
    warm = LocalLauncher(jobs=1, warm=warm_server)
    try:
        started = time.perf_counter()
        timed(warm, stage_job(root, "eval", "warmup"))  # the server's imports, paid once
        first = time.perf_counter() - started
        walls: dict[tuple[str, str], list[float]] = {}
        for r in range(opts.rounds):
            for kind in STAGES:
                for name, launcher in (("cold", cold), ("warm", warm)):
                    wall = timed(launcher, stage_job(root, kind, f"{kind}-{name}-{r}"))
                    walls.setdefault((kind, name), []).append(wall)
        log = (root / "logs" / "eval-warm-0.log").read_text()
        assert "warm start" in log, "the warm stages did not start warm"
    finally:
        warm.close()
    print(f"stage server start and first stage: {first:.1f} s (once per study)")
    print("| stage | cold wall (s) | warm wall (s) | cold / warm |")
    print("|---|---:|---:|---:|")
    result = {}
    for kind in STAGES:
        c = statistics.mean(walls[(kind, "cold")])
        w = statistics.mean(walls[(kind, "warm")])
        result[kind] = {"cold_s": c, "warm_s": w, "ratio": c / w}
        print(f"| {kind} | {c:.2f} | {w:.2f} | {c / w:.2f}x |")
    print(json.dumps(result))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
