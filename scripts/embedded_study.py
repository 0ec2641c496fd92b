"""The embedded study's evidence: shared SFT, one GRPO arm per domain and seed, one table.

python scripts/embedded_study.py --seeds 0 1 2 --jobs 2
python scripts/embedded_study.py --domains math code --seeds 0 trainer.max_steps=80

Runs ``python -m rlvr.sft experiment=tiny_sft`` once (skipped when its model exists), then
``python -m rlvr.train experiment=tiny_rl_<domain> trainer.seed=<seed>`` per point, ``--jobs``
at a time with the cores split between them; a point whose ``summary.json`` exists is not
rerun. Extra ``key=value`` arguments go to every GRPO arm. The table compares each arm's
held-out Avg@k before (the SFT model, evaluated inside the run) and after GRPO, per seed and
averaged, with greedy accuracy and GRPO time beside it; it is printed and written to
``<output_root>/tiny_study/table.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOMAINS = ("math", "code", "science", "instruction", "agent")
TARGET_POINTS = 5.0  # the rise over SFT each domain's held-out Avg@k should show


def run_logged(cmd: list[str], log_path: Path, threads: int) -> int:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        return subprocess.run(
            cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        ).returncode


def ensure_sft(root: Path, threads: int) -> Path:
    final = root / "tiny_sft" / "base" / "final"
    if not (final / "config.json").is_file():
        print(f"SFT: python -m rlvr.sft experiment=tiny_sft -> {final}", flush=True)
        cmd = [sys.executable, "-m", "rlvr.sft", "experiment=tiny_sft", f"paths.output_root={root}"]
        if run_logged(cmd, root / "tiny_sft.log", threads) != 0:
            sys.exit(f"SFT failed; see {root / 'tiny_sft.log'}")
    return final


def arm_dir(root: Path, domain: str, seed: int) -> Path:
    return root / "tiny_study" / f"{domain}-seed{seed}"


def run_arm(root: Path, domain: str, seed: int, extra: list[str], threads: int) -> str:
    out = arm_dir(root, domain, seed)
    if (out / "summary.json").is_file():
        return f"{out.name}: done before"
    cmd = [
        sys.executable, "-m", "rlvr.train", f"experiment=tiny_rl_{domain}",
        f"trainer.seed={seed}", f"paths.output_root={root}", f"hydra.run.dir={out}", *extra,
    ]  # fmt: skip
    code = run_logged(cmd, out.with_suffix(".log"), threads)
    return f"{out.name}: " + ("ok" if code == 0 else f"FAILED ({code}), see {out}.log")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table(root: Path, domains: list[str], seeds: list[int]) -> str:
    lines = [
        "| domain | SFT Avg@k (greedy) | SFT pass@k | after GRPO Avg@k (greedy) "
        "| Δ Avg@k per seed | mean Δ | GRPO s |",
        "|---|---|---|---|---|---|---|",
    ]
    passed, shape = 0, "no finished arms"
    for domain in domains:
        runs = []
        for seed in seeds:
            path = arm_dir(root, domain, seed) / "summary.json"
            if path.is_file():
                runs.append(json.loads(path.read_text()))
        if not runs:
            lines.append(f"| {domain} | – | – | – | – | – | – |")
            continue
        start = [r["heldout"]["start"][domain] for r in runs]
        after = [r["heldout"]["rl"][domain] for r in runs]
        deltas = [100 * (a["avg_at_k"] - s["avg_at_k"]) for s, a in zip(start, after, strict=True)]
        mean_delta = statistics.mean(deltas)
        shape = f"{start[0]['prompts']} held-out prompts per domain, k={start[0]['k']}"
        passed += mean_delta >= TARGET_POINTS

        def mean(ms: list[dict], key: str) -> str:
            return _pct(statistics.mean(m.get(key, float("nan")) for m in ms))

        lines.append(
            f"| {domain} | {mean(start, 'avg_at_k')} ({mean(start, 'greedy_accuracy')}) "
            f"| {mean(start, 'pass_at_k')} "
            f"| {mean(after, 'avg_at_k')} ({mean(after, 'greedy_accuracy')}) "
            f"| {', '.join(f'{d:+.1f}' for d in deltas)} "
            f"| {f'**{mean_delta:+.1f}**' if mean_delta >= TARGET_POINTS else f'{mean_delta:+.1f}'} "
            f"| {statistics.mean(r['rl']['seconds'] for r in runs):.0f} |"
        )
    lines += [
        "",
        f"Seeds {seeds}; {shape}. "
        f"{passed} of {len(domains)} domains rise by at least {TARGET_POINTS:.0f} points on average.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--jobs", type=int, default=1, help="GRPO arms run at once")
    parser.add_argument("--threads", type=int, help="torch threads per arm (cores / jobs)")
    parser.add_argument("--output-root", default=str(REPO / "outputs"))
    parser.add_argument("--table-only", action="store_true", help="tabulate finished arms only")
    args, extra = parser.parse_known_args()
    if bad := [e for e in extra if "=" not in e or e.startswith("-")]:
        parser.error(f"unknown arguments {bad}; pass Hydra overrides as key=value")
    root = Path(args.output_root).resolve()
    cores = os.cpu_count() or 1
    if not args.table_only:
        ensure_sft(root, cores)
        points = [(d, s) for s in args.seeds for d in args.domains]
        threads = args.threads or max(1, cores // args.jobs)
        with ThreadPoolExecutor(args.jobs) as pool:
            for line in pool.map(lambda p: run_arm(root, p[0], p[1], extra, threads), points):
                print(line, flush=True)
    text = table(root, args.domains, args.seeds)
    (root / "tiny_study").mkdir(parents=True, exist_ok=True)
    (root / "tiny_study" / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
