"""The study's tables from evaluation summaries: main, merge methods, mixed - best merge, cost."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.merging.presets import PRESETS
from rlvr.reporting.seeds import (
    ModelGroup,
    Stat,
    group_results,
    paired_difference,
    seed_rank,
    seed_summary,
    split_seed,
)
from rlvr.runs.accounting import run_cost, sum_compute
from tasks.schema import DOMAINS

# cascade_stage: a cascade's model before its last stage (rlvr.reporting.arms tabulates them)
ROLES = ("base", "sft", "expert", "merge", "mixed", "adaptive", "cascade", "distill", "cascade_stage", "other")
MT_OPD = "mt_opd"  # label stem of the study's multi-teacher distillation models
Cell = Stat | float | int | str | None  # Stat: a score over seeds


@dataclass(frozen=True)
class ModelResult:
    """One evaluated model: label, role, provenance (model.json) and per-benchmark summaries."""

    label: str
    role: str
    info: Mapping[str, Any]
    summaries: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Table:
    name: str  # file stem
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def infer_role(label: str, info: Mapping[str, Any], overrides: Mapping[str, str]) -> str:
    """Explicit override, then the label (base, sft, mixed*), then provenance, then domain names.

    A ``-seed<N>`` suffix is ignored: ``math-seed1`` is an expert like ``math``; an override may
    name either the full label or its stem.
    """
    stem, _ = split_seed(label)
    for key in (label, stem):
        if key in overrides:
            return overrides[key]
    lowered = stem.lower()
    if lowered.startswith("cascade@"):
        return "cascade_stage"
    if lowered in ("cascade", "adaptive"):  # the study's arms beyond the paper
        return lowered
    if lowered in ("base", "sft") or lowered.startswith("mixed"):
        return "mixed" if lowered.startswith("mixed") else lowered
    if "distill" in info or lowered.startswith(MT_OPD):
        return "distill"
    if "merge" in info or lowered in PRESETS:
        return "merge"
    domains = info.get("domains") or []
    if domains:
        return "expert" if len(domains) == 1 else "mixed"
    return "expert" if lowered in DOMAINS else "other"


def load_results(study: Path, overrides: Mapping[str, str] | None = None) -> list[ModelResult]:
    """Every ``<study>/eval/<label>/`` with at least one summary, in the paper's row order."""
    results = []
    for folder in sorted((study / "eval").glob("*/")):
        summaries = {
            p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json")) if p.name != "model.json"
        }
        if not summaries:
            continue
        info_path = folder / "model.json"
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        role = infer_role(folder.name, info, overrides or {})
        results.append(ModelResult(folder.name, role, info, summaries))
    return sorted(results, key=_row_key)


def _row_key(r: ModelResult) -> tuple:
    stem, seed = split_seed(r.label)
    domains = list(r.info.get("domains") or [stem])
    domain_rank = DOMAINS.index(domains[0]) if domains[0] in DOMAINS else len(DOMAINS)
    merge, _ = split_seed((r.info.get("merge") or {}).get("name", stem))
    merge_rank = list(PRESETS).index(merge) if merge in PRESETS else len(PRESETS)
    return (
        ROLES.index(r.role) if r.role in ROLES else len(ROLES),
        domain_rank,
        merge_rank,
        stem,
        seed_rank(seed),
    )


def benchmark_order(results: Sequence[ModelResult]) -> list[tuple[str, str]]:
    """(domain, benchmark) pairs grouped by domain in the study's domain order."""
    seen = {(s["domain"], b) for r in results for b, s in r.summaries.items()}
    rank = {d: i for i, d in enumerate(DOMAINS)}
    return sorted(seen, key=lambda db: (rank.get(db[0], len(rank)), db[1]))


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals and len(vals) == len(values) else None


def score(r: ModelResult, bench: str, metric: str) -> float | None:
    """The metric in percent (paper style); None when this model lacks the benchmark."""
    s = r.summaries.get(bench)
    value = None if s is None else s.get(metric)
    return None if value is None else 100.0 * float(value)


def domain_scores(r: ModelResult, benches, metric: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for domain in dict.fromkeys(d for d, _ in benches):
        out[domain] = _mean([score(r, b, metric) for d, b in benches if d == domain])
    return out


def main_table(results: Sequence[ModelResult], metric: str) -> Table:
    """One row per model (its seeds as mean ± sd), one column per benchmark, and the average;
    a cascade's intermediate models have their own table."""
    benches = benchmark_order(results)
    groups = [g for g in group_results(results) if g.role != "cascade_stage"]
    seeded = any(g.n >= 2 for g in groups)  # the seeds column only where it says something
    rows = []
    for g in groups:
        values = [g.stat(score, b, metric) for _, b in benches]
        n = (g.n,) if seeded else ()
        rows.append((g.label, g.role, *n, *values, g.stat(score_at, benches, "avg", metric)))
    seeds = ("seeds",) if seeded else ()
    cols = ("model", "role", *seeds, *(f"{d}/{b}" for d, b in benches), "avg")
    return Table("main_table", f"Main table ({metric}, %)", cols, tuple(rows))


def merge_table(results: Sequence[ModelResult], metric: str) -> Table:
    benches = benchmark_order(results)
    domains = list(dict.fromkeys(d for d, _ in benches))
    # MT-OPD combines the same experts another way: a row beside the merges
    merges = [g for g in group_results(results) if g.role in ("merge", "distill")]
    seeded = any(g.n >= 2 for g in merges)
    rows = []
    for g in merges:
        per = [g.stat(score_at, benches, d, metric) for d in domains]
        method = (g.first.info.get("merge") or {}).get("mergekit_method", "")
        method = "on-policy distillation" if g.role == "distill" else method
        n = (g.n,) if seeded else ()
        rows.append((g.label, method, *n, *per, g.stat(score_at, benches, "avg", metric)))
    cols = ("merge", "mergekit method", *(("seeds",) if seeded else ()), *domains, "avg")
    return Table("merge_table", f"Merge methods by domain ({metric}, %)", cols, tuple(rows))


def score_at(r: ModelResult, benches, domain: str, metric: str) -> float | None:
    if domain == "avg":
        return _mean([score(r, b, metric) for _, b in benches])
    return domain_scores(r, benches, metric)[domain]


def _best(merges: Sequence[ModelGroup], *args: Any) -> tuple[ModelGroup | None, Stat]:
    """The merge with the highest mean; the first of equal means, in row order."""
    scored = [(g, s) for g in merges if (s := g.stat(score_at, *args)).mean is not None]
    return max(scored, key=lambda gs: gs[1].mean or 0.0) if scored else (None, Stat(None))


def diff_table(results: Sequence[ModelResult], metric: str) -> Table:
    """Per domain and overall: mixed, the best merge there, and mixed - best merge (paired by seed)."""
    benches = benchmark_order(results)
    groups = group_results(results)
    mixed = [g for g in groups if g.role == "mixed"]
    merges = [g for g in groups if g.role == "merge"]
    title = f"Mixed - best merge per domain ({metric}, points)"
    if not mixed or not merges:
        return Table("diff_table", title, ("domain",), (), ("needs a mixed model and a merge",))
    mix = mixed[0]
    seeded = any(g.n >= 2 for g in (mix, *merges))
    rows = []
    for domain in [*dict.fromkeys(d for d, _ in benches), "avg"]:
        best, best_score = _best(merges, benches, domain, metric)
        diff, verdict = (Stat(None), None)
        if best is not None:
            args = (benches, domain, metric)
            diff, verdict = paired_difference(mix.values(score_at, *args), best.values(score_at, *args))
        row = (domain, mix.stat(score_at, benches, domain, metric), best.label if best else "")
        rows.append((*row, best_score, diff, *((diff.n, verdict) if seeded else ())))
    cols = ("domain", mix.label, "best merge", "best merge score", "mixed - best merge")
    if not seeded:
        return Table("diff_table", title, cols, tuple(rows))
    notes = (
        "best merge: the highest mean over its seeds; mixed - best merge: mean ± sd over the "
        "seeds both have of (mixed seed s - merge seed s); exceeds seed spread: |mean| > sd",
    )
    return Table("diff_table", title, (*cols, "n", "exceeds seed spread"), tuple(rows), notes)


def cost_table(results: Sequence[ModelResult], extra_runs: Mapping[str, str], metric: str = "avg_at_k") -> Table:
    """Device-seconds per run (every seed a row); separate = experts + best merge, mixed = mixed.

    Both arms sum every seed's runs: all expert runs plus all runs of the merge with the best
    mean avg, against all mixed runs.
    """
    runs = {r.label: r.info["run_dir"] for r in results if r.info.get("run_dir")}
    runs.update(extra_runs)
    role = {r.label: r.role for r in results}
    merges = {r.label: r.info["path"] for r in results if r.role == "merge" and "path" in r.info}
    rows: list[tuple[Cell, ...]] = []
    for label, path in {**runs, **merges}.items():
        cost = run_cost(path) or {}
        costs = (cost.get("device_seconds"), cost.get("rl_device_seconds"))
        rows.append((label, role.get(label, "other"), *costs, cost.get("teacher_device_seconds")))
    experts = [label for label in runs if role.get(label) == "expert"]
    mixed = [label for label in runs if role.get(label) == "mixed"]
    distilled = [label for label in runs if role.get(label) == "distill"]
    merge_groups = [g for g in group_results(results) if set(g.labels) & set(merges)]
    best, _ = _best(merge_groups, benchmark_order(results), "avg", metric)
    merge_used = [label for label in (best.labels if best else ()) if label in merges]
    separate = sum_compute([*(runs[x] for x in experts), *(merges[x] for x in merge_used)])
    together = sum_compute(runs[x] for x in mixed)
    keys = ("device_seconds", "rl_device_seconds")
    ratios = [together[k] / separate[k] if mixed and separate[k] > 0 else None for k in keys]
    rows += [
        ("separate (experts + merge)", "total", *(separate[k] for k in keys), None),
        ("mixed (total)", "total", *(together[k] for k in keys), None),
        ("mixed / separate", "ratio", *ratios, None),
    ]
    if distilled:  # MT-OPD pays for the experts too, then for its own run
        opd = sum_compute([*(runs[x] for x in experts), *(runs[x] for x in distilled)])
        teacher = sum((run_cost(runs[x]) or {}).get("teacher_device_seconds", 0) for x in distilled)
        rows.append(("mt-opd (experts + distillation)", "total", *(opd[k] for k in keys), teacher))
    merge_note = ""
    if best is not None:
        merge_note = f" + merge {merge_used[0] if len(merge_used) == 1 else best.label}"
        merge_note += f" ({len(merge_used)} runs)" if len(merge_used) > 1 else ""
    notes = (
        f"separate arm: {len(experts)} expert run(s){merge_note} (the best merge by avg)",
        f"seeds summed: {seed_summary([*experts, *merge_used])} in the separate arm, "
        f"{seed_summary(mixed)} in the mixed arm ({len(mixed)} run(s))",
        "device-seconds = processes x wall seconds from each run's summary.json; "
        "rl_device_seconds counts the RL steps only (no SFT warm start, no held-out evals); "
        "teacher_device_seconds: distillation's teacher forwards, inside its RL seconds",
    )
    cols = ("run", "role", "device_seconds", "rl_device_seconds", "teacher_device_seconds")
    return Table("cost_table", "Compute (device-seconds)", cols, tuple(rows), notes)


def fmt(cell: Cell) -> str:
    if isinstance(cell, Stat):
        return cell.text()
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return "–"
    if isinstance(cell, float):
        return f"{cell:.2f}"
    return str(cell)


def to_markdown(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |"]
    text = [all(isinstance(row[i], str) for row in table.rows) for i in range(len(table.columns))]
    lines.append("|" + "|".join(":---" if t else "---:" for t in text) + "|")
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in table.rows]
    for note in table.notes:
        lines += ["", f"_{note}_"]
    return "\n".join(lines).rstrip() + "\n"


def flat_rows(table: Table) -> tuple[list[str], list[list[Any]]]:
    """Machine-readable columns and rows: a Stat is its mean, plus a ``<column> sd`` column
    after each score column when some cell of the table has two or more seeds; None is ""."""
    stat_cols = {i for i in range(len(table.columns)) if any(isinstance(r[i], Stat) for r in table.rows)}
    spread = any(isinstance(c, Stat) and c.n >= 2 for row in table.rows for c in row)
    columns: list[str] = []
    for i, name in enumerate(table.columns):
        columns += [name, f"{name} sd"] if spread and i in stat_cols else [name]
    rows = []
    for row in table.rows:
        flat: list[Any] = []
        for i, cell in enumerate(row):
            if isinstance(cell, Stat):
                flat += [cell.mean, cell.sd] if spread and i in stat_cols else [cell.mean]
            else:  # a plain cell in a score column: an empty sd keeps the columns aligned
                flat += [cell, None] if spread and i in stat_cols else [cell]
        rows.append(["" if c is None else c for c in flat])
    return columns, rows


def write_table(table: Table, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, csv_path = folder / f"{table.name}.md", folder / f"{table.name}.csv"
    md.write_text(to_markdown(table))
    columns, rows = flat_rows(table)
    with csv_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return [md, csv_path]
