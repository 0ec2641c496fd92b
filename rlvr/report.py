"""The mix-versus-merge report: tables (Markdown + CSV), plots (PNG) and, optionally, W&B.

python -m rlvr.report experiment=m2rl_tiny            # reads outputs/m2rl_tiny/eval/*
python -m rlvr.report report.study_dir=outputs/study report.metric=greedy_accuracy
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.analysis.outputs import report_section
from rlvr.config import ConfigError, RunConfig
from rlvr.reporting.answers import answers_markdown, length_table
from rlvr.reporting.arms import arms_table, cascade_table, weights_plot
from rlvr.reporting.calibration import calibration_table
from rlvr.reporting.paper import paper_view
from rlvr.reporting.plots import delta_heatmap, reward_curves
from rlvr.reporting.recipe import recipe_section
from rlvr.reporting.recovery import forgetting_table, recovery_table
from rlvr.reporting.seeds import group_results
from rlvr.reporting.tables import (
    ModelResult,
    Table,
    cost_table,
    diff_table,
    flat_rows,
    load_results,
    main_table,
    merge_table,
    to_markdown,
    write_table,
)

log = logging.getLogger(__name__)

METRICS = ("avg_at_k", "pass_at_k", "pass_at_1", "greedy_accuracy")


@dataclass(frozen=True)
class Report:
    folder: Path
    tables: tuple[Table, ...]
    images: tuple[Path, ...]


def build_report(
    study: Path,
    metric: str = "avg_at_k",
    roles: Mapping[str, str] | None = None,
    runs: Mapping[str, str] | None = None,
) -> Report:
    """Read ``<study>/eval`` and the run folders; write everything into ``<study>/report``."""
    if metric not in METRICS:
        raise ConfigError(f"report.metric={metric!r}; choose one of {', '.join(METRICS)}")
    results = load_results(study, roles)
    if not results:
        raise ConfigError(f"no evaluation summaries under {study / 'eval'}; run rlvr.evaluate first")
    folder = study / "report"
    tables = (
        main_table(results, metric),
        merge_table(results, metric),
        diff_table(results, metric),
        cost_table(results, runs or {}, metric),
    )
    arms = arms_table(results, metric)  # beyond mixed and merged: every arm's avg and compute
    tables += (arms,) if _beyond_the_paper(results) else ()
    tables += (recovery_table(results, metric), forgetting_table(results, metric))  # kept, lost
    cascade = cascade_table(results, metric)  # does a later stage undo an earlier one?
    tables += (cascade,) if cascade.rows else ()
    lengths = length_table(study, results)  # did training shorten the answers?
    tables += (lengths,) if any(c != "" for row in lengths.rows for c in row[1:]) else ()
    room = calibration_table(results)  # does the SFT model leave RL room on each set?
    tables += (room,) if room.rows else ()
    paper = paper_view(study, results, metric, runs or {})  # beside the published numbers
    for table in (*tables, *paper):
        write_table(table, folder)
    heatmap = delta_heatmap(results, metric, folder / "difference_to_sft.png")  # who gained where
    images = [heatmap] if heatmap else []
    curves = reward_curves(*_curve_runs(results, runs or {}), folder / "reward_curves.png")
    images += [curves] if curves else []
    weights = weights_plot(results, folder / "mixture_weights.png")  # the adaptive arm's
    images += [weights] if weights else []
    analyses = report_section(study)  # rlvr.analyze's tables and figures, when present
    answers = answers_markdown(study, results)  # the start's answers beside a trained model's
    parts = [_markdown(tables, images), answers, _paper_markdown(paper)]
    parts += [*recipe_section(study), *analyses]
    (folder / "report.md").write_text("\n".join(parts))
    log.info("report written to %s", folder)
    return Report(folder, (*tables, *paper), tuple(images))


def _beyond_the_paper(results: Sequence[ModelResult]) -> bool:
    return any(r.role in ("cascade", "adaptive", "distill") for r in results)


def _curve_runs(
    results: Sequence[ModelResult], extra: Mapping[str, str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Mixed runs (label -> folders) and single-domain runs (domain -> folders), every seed.

    A domain's curves come from its first expert model in row order (all of that model's seeds).
    """
    mixed: dict[str, list[str]] = {}
    experts: dict[str, list[str]] = {}
    for g in group_results(results):
        dirs = [
            run_dir
            for r in g.members.values()
            if (run_dir := extra.get(r.label) or r.info.get("run_dir")) and (Path(run_dir) / "metrics.jsonl").is_file()
        ]
        domains = g.first.info.get("domains") or []
        if not dirs:
            continue
        if g.role in ("mixed", "adaptive"):
            mixed[g.label] = dirs
        elif g.role == "expert" and len(domains) == 1:
            experts.setdefault(domains[0], dirs)
    return mixed, experts


def _markdown(tables: Sequence[Table], images: Sequence[Path]) -> str:
    parts = ["# Mix versus merge", ""]
    parts += [to_markdown(t) for t in tables]
    parts += [f"![{p.stem}]({p.name})" for p in images]
    return "\n".join(parts) + "\n"


def _paper_markdown(tables: Sequence[Table]) -> str:
    intro = (
        "Our models beside the published M2RL numbers (arXiv 2602.12566; the release "
        "Mosi-AI/M2RL d9807cf): its nine benchmarks in its column order, each of our roles "
        "against the paper's row of that role, the benchmarks we did not score and why, and "
        "our runs' compute against its GPU-hours, and how much of its experts' gains each of its arms kept."
    )
    return "\n".join(["## Beside the paper", "", intro, "", *(to_markdown(t) for t in tables)])


def log_to_wandb(run: RunConfig, report: Report) -> None:
    """The report's tables and figures to the report stage's W&B run, grouped with the study's
    other stages (no-op when tracking is off)."""
    from rlvr.tracking.wandb_run import open_stage_run

    tracked = open_stage_run(run, report.folder, "report")
    if tracked is None:
        return
    for t in report.tables:
        columns, data = flat_rows(t)  # a score over seeds: mean and sd columns
        tracked.table(t.name, columns, _typed(data))
    tracked.images({p.stem: p for p in report.images})
    tracked.finish()


def _typed(data: list[list]) -> list[list]:
    """W&B tables hold one type per column: a text cell ("", "—") in a column of numbers is
    None there."""
    number = [
        any(isinstance(c, int | float) and not isinstance(c, bool) for c in column)
        for column in zip(*data, strict=True)
    ]
    return [[None if n and isinstance(c, str) else c for c, n in zip(row, number, strict=True)] for row in data]


def report_stage(run: RunConfig, run_dir: Path | None = None) -> Report:
    c = run.report
    study = Path(c.study_dir or Path(run.paths.output_root) / run.experiment)
    report = build_report(study, c.metric, c.roles, c.runs)
    log_to_wandb(run, report)
    return report


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("report", report_stage)


if __name__ == "__main__":
    main()
