"""Verifications per second per domain on the shared data: one process vs the worker pool.

    python scripts/bench_verifiers.py [--workers N] [--limit 2000] [--data ../shared/data]

math: GSM8K test + MATH-500 golds, each graded as ``\\boxed{gold}`` and as a perturbed
answer; science: MMLU-STEM questions with the gold letter and a wrong letter;
instruction: IFEval's published GPT-4 responses through ``ifeval`` (skipped with a note
when that verifier is not registered). Single-process runs start with math-verify's parse
cache cleared, like a fresh pool worker. The pool figure is warm (workers started and
primed first); its start-up time is printed separately.

Science and IFEval batches are measured ``--repeats`` times, the two paths alternating, and
the median of each is kept: a 2,000-item science batch is about 40 ms of work, so one
scheduling hiccup would decide a single measurement. Math runs once on each path: its
verifier caches parsed answers, so a repeated batch would hit the workers' warm caches
while the single process starts cold.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from statistics import median

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from math_verify.parser import parse_expr_cached, parse_latex_cached  # noqa: E402

from tasks.registry import shared_data_dir  # noqa: E402
from verifiers import _mathverify, known_verifiers, verify  # noqa: E402
from verifiers.pool.pool import VerifierPool, default_workers  # noqa: E402

Item = tuple[str, dict, str]


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        yield from (json.loads(line) for line in fh if line.strip())


def _perturb(gold: str) -> str:
    digit = re.search(r"[1-9]", gold) or re.search(r"\d", gold)
    if digit is None:
        return gold + "+1"
    return gold[: digit.start()] + str((int(digit.group()) + 1) % 10) + gold[digit.end() :]


def math_items(data: Path) -> list[Item]:
    golds = [r["answer"].split("####")[-1].strip() for r in _jsonl(data / "math/gsm8k_test.jsonl")]
    golds += [str(r["answer"]) for r in _jsonl(data / "math/math500_test.jsonl")]
    items = []
    for gold in golds:
        for answer in (gold, _perturb(gold)):
            items.append((f"Reasoning...\n\\boxed{{{answer}}}", {"answer": gold}, "math"))
    return items


def science_items(data: Path) -> list[Item]:
    items = []
    for row in _jsonl(data / "science/mmlu_stem_test.jsonl"):
        gold = "ABCD"[row["answer"]]
        ref = {"answer": gold, "num_options": 4}
        for letter in (gold, "ABCD"[(row["answer"] + 1) % 4]):
            items.append((f"Reasoning...\nAnswer: {letter}", ref, "science_mcq"))
    return items


def instruction_items(data: Path) -> list[Item]:
    folder = data / "instruction_following"
    inputs = {r["prompt"]: r for r in _jsonl(folder / "ifeval_input_data.jsonl")}
    items = []
    for row in _jsonl(folder / "ifeval_input_response_data_gpt4_20231107_145030.jsonl"):
        spec = inputs.get(row["prompt"])
        if spec is not None:
            ref = {k: spec[k] for k in ("instruction_id_list", "kwargs", "prompt")}
            items.append((row["response"], ref, "ifeval"))
    return items


def spread(items: list[Item], limit: int) -> list[Item]:
    """At most ``limit`` items taken evenly across the list (GSM8K and MATH-500 both)."""
    if len(items) <= limit:
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def per_second(run: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    run()
    return n / (time.perf_counter() - start)


def single_process(items: list[Item]) -> float:
    for cached in (_mathverify.parse_answer, parse_latex_cached, parse_expr_cached):
        cached.cache_clear()
    return per_second(lambda: [verify(c, r, v) for c, r, v in items], len(items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--limit", type=int, default=2000, help="items per domain")
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--repeats", type=int, default=7, help="alternating runs of science and IFEval (median)")
    args = parser.parse_args()

    domains = {"math": math_items, "science": science_items}
    notes = []
    if "ifeval" in known_verifiers():
        domains["instruction"] = instruction_items
    else:
        notes.append("instruction: skipped, the 'ifeval' verifier is not registered")
    batches = {name: spread(load(args.data), args.limit) for name, load in domains.items()}

    start = time.perf_counter()
    with VerifierPool(args.workers, timeout_s=30.0) as pool:
        pool.warm([item for batch in batches.values() for item in batch[:8]])
        startup = time.perf_counter() - start
        rows = []
        for name, batch in batches.items():
            repeats = 1 if name == "math" else max(1, args.repeats)
            singles, pools = [], []
            for _ in range(repeats):
                singles.append(single_process(batch))
                pools.append(per_second(lambda b=batch: pool.verify_batch(b), len(batch)))
            ratios = sorted(p / s for p, s in zip(pools, singles, strict=True))
            rows.append((name, len(batch), median(singles), median(pools), ratios))

    print(f"cpu cores: {os.cpu_count()}  pool workers: {args.workers}  pool start-up: {startup:.1f} s")
    print(
        f"{'domain':<12} {'items':>6} {'single/s':>10} {'pool/s':>10} {'ratio':>7} {'pool s':>7}"
        "  runs (ratio per run, lowest to highest)"
    )
    for name, n, single, pooled, ratios in rows:
        spread_text = " ".join(f"{r:.2f}" for r in ratios)
        print(
            f"{name:<12} {n:>6} {single:>10.1f} {pooled:>10.1f} {pooled / single:>6.2f}x"
            f" {n / pooled:>7.2f}  {len(ratios)} ({spread_text})"
        )
    for note in notes:
        print(note)
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this process {parent:.0f} MB, largest pool worker {worker:.0f} MB")


if __name__ == "__main__":
    main()
