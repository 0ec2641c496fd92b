"""What the output analyses read: a study's evaluations (``<study>/eval``) and held-out rows.

``rlvr.evaluate`` leaves ``<study>/eval/<label>/<benchmark>.jsonl`` (one record per sample:
id, mode, completion, status, score, extracted) beside the ``.json`` summaries and
``model.json`` (the model's path and provenance); roles and row order are the report's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import ConfigError, RunConfig
from rlvr.reporting.tables import ModelResult, benchmark_order, load_results


@dataclass(frozen=True)
class Evaluations:
    """The evaluated models of one study (the report's rows) and their benchmarks."""

    root: Path  # the folder holding eval/
    results: tuple[ModelResult, ...]

    @property
    def benchmarks(self) -> list[tuple[str, str]]:
        """(domain, benchmark) pairs in the report's column order."""
        return benchmark_order(self.results)

    def get(self, label: str) -> ModelResult | None:
        return next((r for r in self.results if r.label == label), None)

    @property
    def sft(self) -> ModelResult:
        found = self.get("sft")
        if found is None:
            raise ConfigError(f"no evaluation of the SFT model under {self.root / 'eval' / 'sft'}")
        return found

    def by_role(self, *roles: str) -> list[ModelResult]:
        return [r for r in self.results if r.role in roles]

    def records(self, label: str, benchmark: str) -> list[dict]:
        """Every per-sample record of one model on one benchmark ([] when absent)."""
        path = self.root / "eval" / label / f"{benchmark}.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def model_path(self, result: ModelResult) -> str:
        return str(result.info.get("path") or result.summaries[next(iter(result.summaries))].get("model_path"))


def load(root: Path, analysis: str, roles: dict[str, str] | None = None) -> Evaluations:
    """The study's evaluations; fail naming the fix when there are none or no SFT model's."""
    results = tuple(load_results(root, roles or {}))
    if not results or not any(r.label == "sft" for r in results):
        raise ConfigError(
            f"analysis {analysis!r} reads evaluations, and {root / 'eval'} has none of the SFT "
            f"model: run the study's eval stages (or rlvr.evaluate with a model labelled sft), "
            f"or drop {analysis} from analyze.analyses"
        )
    return Evaluations(root, results)


def item_scores(records: Sequence[dict]) -> dict[str, float]:
    """Each item's Avg@k: the mean score of its sampled completions (greedy ones left out)."""
    sums: dict[str, list[float]] = {}
    for rec in records:
        if rec.get("mode", "sample") == "sample":
            acc = sums.setdefault(rec["id"], [0.0, 0.0])
            acc[0] += float(rec["score"])
            acc[1] += 1
    return {i: s / n for i, (s, n) in sums.items()}


def heldout_rows(run: RunConfig, benchmark: str, limit: int | None = None) -> list[dict]:
    """The rows ``rlvr.evaluate`` evaluated for this benchmark under this config, the first
    ``limit`` of them (all when None)."""
    from rlvr.evaluation.benchmarks import benchmark_domain, load_benchmark

    e = run.eval
    levels = getattr(run.mixture, "difficulty", None) or {}
    domain = benchmark_domain(benchmark)
    rows = load_benchmark(benchmark, e.max_prompts, run.paths.data_dir, e.seed, levels.get(domain))
    return rows[:limit] if limit is not None else rows
