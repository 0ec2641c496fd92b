"""Benchmark: HumanEval canonical solutions, naive subprocess vs the sandboxed code verifier.

(a) each solution+test written to a file and run with ``subprocess.run([python, file])``,
    sequentially, unsandboxed, as a naive harness would;
(b) the ``code`` verifier (strongest available backend, warm fork-server pool), batch-parallel.
Prints executions/second for both, the ratio (target: b >= 4x a), latency percentiles (p50,
p90, p99) and peak RSS of this process and of the largest finished child.

    .venv/bin/python scripts/bench_sandbox.py [--sandbox auto] [--workers 0] [--repeat 1]
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from verifiers import get_verifier, verify
from verifiers.sandbox import get_sandbox

ROOT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    from tasks.registry import shared_data_dir

    return shared_data_dir()


def load_humaneval() -> list[dict]:
    path = shared_data() / "code" / "HumanEval.jsonl.gz"
    if not path.is_file():
        sys.exit(f"HumanEval not found at {path} (set RLVR_SHARED_DATA)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def percentiles(latencies: list[float]) -> str:
    qs = statistics.quantiles(latencies, n=100, method="inclusive")
    return f"p50 {qs[49] * 1e3:.1f} ms, p90 {qs[89] * 1e3:.1f} ms, p99 {qs[98] * 1e3:.1f} ms"


def run_naive(rows: list[dict], python: str) -> tuple[float, list[float], int]:
    latencies, passed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        for i, row in enumerate(rows):
            path = Path(tmp) / f"p{i}.py"
            source = row["prompt"] + row["canonical_solution"] + "\n" + row["test"]
            path.write_text(source + f"\ncheck({row['entry_point']})\n")
            t0 = time.perf_counter()
            done = subprocess.run([python, str(path)], capture_output=True, timeout=60)
            latencies.append(time.perf_counter() - t0)
            passed += done.returncode == 0
        return time.perf_counter() - start, latencies, passed


def run_sandboxed(rows: list[dict], verifier) -> tuple[float, list[float], int]:
    items = [
        (
            f"```python\n{row['canonical_solution']}\n```",
            {
                "style": "assert",
                "test": row["test"],
                "entry_point": row["entry_point"],
                "prefix": row["prompt"],
            },
        )
        for row in rows
    ]

    def timed(item: tuple[str, dict]) -> tuple[float, bool]:
        t0 = time.perf_counter()
        verdict = verify(item[0], item[1], verifier)
        return time.perf_counter() - t0, verdict.is_correct

    workers = get_sandbox(verifier.sandbox, verifier.workers).workers
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(timed, items))
    return time.perf_counter() - start, [r[0] for r in results], sum(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="auto", help="auto|nsjail|bwrap|unshare|rlimit")
    parser.add_argument("--workers", type=int, default=0, help="0: one per core, capped at 8")
    parser.add_argument(
        "--naive-python", default=sys.executable, help="interpreter of the naive baseline (default: this one)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="passes over the 164 problems")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = load_humaneval() * args.repeat

    t0 = time.perf_counter()
    sandbox = get_sandbox(args.sandbox, args.workers)  # probe + start the pool, timed apart
    startup = time.perf_counter() - t0
    verifier = get_verifier("code", sandbox=args.sandbox, workers=args.workers)

    naive_s, naive_lat, naive_ok = run_naive(rows, args.naive_python)
    box_s, box_lat, box_ok = run_sandboxed(rows, verifier)
    n = len(rows)
    naive_rate, box_rate = n / naive_s, n / box_s
    print(f"executions: {n} HumanEval canonical solutions; cores: {os.cpu_count()}")
    print(
        f"(a) naive subprocess ({args.naive_python}), sequential, unsandboxed: {naive_rate:.1f} exec/s "
        f"({naive_ok}/{n} passed); latency {percentiles(naive_lat)}"
    )
    print(
        f"(b) code verifier, backend {sandbox.name}, {sandbox.workers} workers: {box_rate:.1f} "
        f"exec/s ({box_ok}/{n} passed); latency {percentiles(box_lat)}"
    )
    print(
        f"ratio (b)/(a): {box_rate / naive_rate:.2f}x (target >= 4x); "
        f"probe + pool start-up (not in (b)): {startup:.2f} s"
    )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this process {own:.0f} MB, largest finished child {child:.0f} MB")


if __name__ == "__main__":
    main()
