"""An evaluation stage's W&B run: per-benchmark scores as summary metrics, and a sample of the
completions with their verdicts as a table.

Read from what the evaluation wrote (``<study>/eval/<label>/<benchmark>.json`` and ``.jsonl``),
so a benchmark reused from an earlier run or another model with the same weights is logged too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig

METRICS = ("avg_at_k", "pass_at_k", "pass_at_1", "greedy_accuracy")
RECORDS_PER_BENCHMARK = 16
COMPLETION_CHARS = 2000
COLUMNS = ("model", "benchmark", "id", "mode", "sample", "status", "score", "completion")


def scores(run: RunConfig, study: Path, labels: list[str]) -> dict[str, float]:
    """``eval/<domain>/<benchmark>/<metric>`` for every evaluated pair of this stage's models
    (``eval/<label>/<domain>/...`` where the stage evaluates several models)."""
    from rlvr.evaluation.benchmarks import benchmark_domain

    out: dict[str, float] = {}
    for label in labels:
        for bench in run.eval.tasks:
            path = study / "eval" / label / f"{bench}.json"
            if not path.is_file():
                continue
            summary = json.loads(path.read_text())
            prefix = "eval/" + (f"{label}/" if len(labels) > 1 else "")
            prefix += f"{benchmark_domain(bench)}/{bench}"
            for metric in METRICS:
                if isinstance(summary.get(metric), int | float):
                    out[f"{prefix}/{metric}"] = summary[metric]
            for level, value in (summary.get("ifeval") or {}).items():
                out[f"{prefix}/ifeval_{level}"] = value
    return out


def record_sample(run: RunConfig, study: Path, labels: list[str]) -> list[list[Any]]:
    """The first ``RECORDS_PER_BENCHMARK`` records of every pair, completions cut to length."""
    rows = []
    for label in labels:
        for bench in run.eval.tasks:
            path = study / "eval" / label / f"{bench}.jsonl"
            if not path.is_file():
                continue
            for line in path.read_text().splitlines()[:RECORDS_PER_BENCHMARK]:
                rec = json.loads(line)
                rec["completion"] = rec["completion"][:COMPLETION_CHARS]
                rows.append([rec.get(c) for c in COLUMNS])
    return rows


def log_evaluation(run: RunConfig, run_dir: Path, study: Path) -> None:
    """Scores and records of this evaluation stage to its W&B run (no-op when tracking is off)."""
    from rlvr.tracking.wandb_run import open_stage_run

    tracked = open_stage_run(run, run_dir, "evaluate")
    if tracked is None:
        return
    labels = model_labels(run)  # parsed once: parse_models checks every model's folder
    tracked.summarise(scores(run, study, labels))
    tracked.table("eval/records", COLUMNS, record_sample(run, study, labels))
    tracked.finish()


def heldout_scores(evals: dict[str, dict[str, dict[str, Any]]]) -> dict[str, float]:
    """A training stage's in-run held-out results (``summary.json``'s ``heldout``: model role ->
    domain -> metric) as ``eval/<role>/<domain>/heldout/<metric>``."""
    return {
        f"eval/{role}/{domain}/heldout/{metric}": value
        for role, domains in evals.items()
        for domain, metrics in (domains or {}).items()
        for metric, value in metrics.items()
        if metric in METRICS and isinstance(value, int | float)
    }


def log_heldout(run: RunConfig, run_dir: Path, verb: str, evals: dict) -> None:
    """The in-run held-out results to the stage's run as summary metrics. The trainer finished
    the run at train end; this resumes it (same id), so they land in the same run."""
    from rlvr.tracking.wandb_run import open_stage_run

    values = heldout_scores(evals)
    tracked = open_stage_run(run, run_dir, verb) if values else None
    if tracked is None:
        return
    tracked.summarise(values)
    tracked.finish()


def model_labels(run: RunConfig) -> list[str]:
    from rlvr.evaluation.evaluator import parse_models

    return [m.label for m in parse_models(run.eval.models)]
