"""One model on one benchmark, shard by shard: generate, grade, record, summarise.

The prompts run in the slices of ``rlvr.evaluation.shards``, each written as soon as it is
graded. A shard samples from ``eval.seed`` plus the index of its first prompt, so its records
depend on the settings alone, never on which run wrote it: an evaluation killed after some
shards and run again evaluates only the others and ends with the records of an uninterrupted
run. A benchmark that fits one shard samples from ``eval.seed`` itself. The summary is computed
from the records, the same way for shards read back and shards just evaluated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rlvr.evaluation.backends import Backend, generate_and_score
from rlvr.evaluation.benchmarks import benchmark_domain
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.metrics import summarise
from rlvr.evaluation.results import sample_records
from rlvr.evaluation.shards import Shard, ShardResult, ShardStore, shard_ranges
from rlvr.rewards.bridge import Scorer
from verifiers import Verdict
from verifiers.verdict import Status

MODES = ("sample", "greedy")  # the records' order: every sampled completion, then the greedy


@dataclass(frozen=True)
class BenchmarkJob:
    """What one model's evaluation on one benchmark decodes and how it is graded."""

    label: str
    bench: str
    rows: list[dict]
    decoding: Decoding
    with_greedy: bool  # a greedy completion per prompt beside the samples
    format_gate: bool  # the </think> gate: only for models trained to think
    shard_prompts: int  # 0: one shard


def evaluate_benchmark(
    backend: Backend, job: BenchmarkJob, scorer: Scorer, store: ShardStore
) -> tuple[list[dict], dict[str, Any]]:
    """Per-sample records and the summary; shards ``store`` holds are read, not evaluated."""
    started = time.perf_counter()
    shards = shard_ranges(len(job.rows), job.shard_prompts)
    results, resumed = [], 0
    for shard in shards:
        ids = [str(r["id"]) for r in job.rows[shard.start : shard.stop]]
        result = store.load(shard, ids)
        if result is None:
            result = run_shard(backend, job, scorer, shard)
            store.save(shard, ids, result)
        else:
            resumed += 1
        results.append(result)
    records = [r for mode in MODES for res in results for r in res.records if r["mode"] == mode]
    sampling_s = sum(res.sampling_s for res in results)  # every shard's, whichever run it was
    summary = {
        "model": job.label,
        "benchmark": job.bench,
        "domain": benchmark_domain(job.bench),
        **summary_of(job, records),
        "format_gate": job.format_gate,
        "shards": len(shards),
        "shards_resumed": resumed,
        "sampling_s": sampling_s,
        "samples_per_s": len(records) / sampling_s if sampling_s > 0 else 0.0,
        "seconds": time.perf_counter() - started,  # this run's
        "decoding": vars(job.decoding).copy(),
    }
    return records, summary


def run_shard(backend: Backend, job: BenchmarkJob, scorer: Scorer, shard: Shard) -> ShardResult:
    """The shard's prompts sampled (from the shard's seed) and greedy, graded, as records."""
    started = time.perf_counter()
    rows = job.rows[shard.start : shard.stop]
    seeded = backend.with_seed(backend.seed + shard.start)
    texts, verdicts = generate_and_score(seeded, rows, job.decoding, scorer, job.format_gate)
    mode = "greedy" if job.decoding.greedy else "sample"
    records = sample_records(job.label, job.bench, rows, texts, verdicts, mode)
    if job.with_greedy and not job.decoding.greedy:
        greedy = Decoding(greedy=True, max_new_tokens=job.decoding.max_new_tokens)
        texts, verdicts = generate_and_score(seeded, rows, greedy, scorer, job.format_gate)
        records += sample_records(job.label, job.bench, rows, texts, verdicts, "greedy")
    return ShardResult(records, time.perf_counter() - started)


def summary_of(job: BenchmarkJob, records: list[dict]) -> dict[str, Any]:
    """Avg@k, pass@k, greedy accuracy, .. (``metrics.summarise``) from the records."""
    sampled = verdicts_per_row(records, "greedy" if job.decoding.greedy else "sample")
    greedy = sampled if job.decoding.greedy else None
    if job.with_greedy and not job.decoding.greedy:
        greedy = verdicts_per_row(records, "greedy")
    # greedy decoding alone: its verdicts are the greedy accuracy, over one sample each
    k = 1 if job.decoding.greedy else job.decoding.k
    if len(sampled) != len(job.rows):
        raise RuntimeError(f"{job.label}/{job.bench}: records of {len(sampled)} prompts for {len(job.rows)}")
    return summarise(job.rows, sampled, greedy, k)


def verdicts_per_row(records: list[dict], mode: str) -> list[list[Verdict]]:
    """The ``mode`` records' verdicts, grouped by prompt (each prompt's samples count from 0)."""
    out: list[list[Verdict]] = []
    for r in records:
        if r["mode"] != mode:
            continue
        if r["sample"] == 0:
            out.append([])
        out[-1].append(Verdict(r["score"], Status(r["status"]), r["extracted"]))
    return out
