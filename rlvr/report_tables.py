"""The study's tables from evaluation summaries: main, merge methods, mixed - best merge, cost."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.accounting import run_cost, sum_compute
from rlvr.merge_presets import PRESETS
from tasks.schema import DOMAINS

ROLES = ("base", "sft", "expert", "merge", "mixed", "other")
Cell = float | str | None


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
    """Explicit override, then the label (base, sft, mixed*), then provenance, then domain names."""
    if label in overrides:
        return overrides[label]
    lowered = label.lower()
    if lowered in ("base", "sft") or lowered.startswith("mixed"):
        return "mixed" if lowered.startswith("mixed") else lowered
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
            p.stem: json.loads(p.read_text())
            for p in sorted(folder.glob("*.json"))
            if p.name != "model.json"
        }
        if not summaries:
            continue
        info_path = folder / "model.json"
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        role = infer_role(folder.name, info, overrides or {})
        results.append(ModelResult(folder.name, role, info, summaries))
    return sorted(results, key=_row_key)


def _row_key(r: ModelResult) -> tuple:
    domains = list(r.info.get("domains") or [r.label])
    domain_rank = DOMAINS.index(domains[0]) if domains[0] in DOMAINS else len(DOMAINS)
    merge = (r.info.get("merge") or {}).get("name", r.label)
    merge_rank = list(PRESETS).index(merge) if merge in PRESETS else len(PRESETS)
    return (
        ROLES.index(r.role) if r.role in ROLES else len(ROLES),
        domain_rank,
        merge_rank,
        r.label,
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
    benches = benchmark_order(results)
    rows = []
    for r in results:
        values = [score(r, b, metric) for _, b in benches]
        rows.append((r.label, r.role, *values, _mean(values)))
    cols = ("model", "role", *(f"{d}/{b}" for d, b in benches), "avg")
    return Table("main_table", f"Main table ({metric}, %)", cols, tuple(rows))


def merge_table(results: Sequence[ModelResult], metric: str) -> Table:
    benches = benchmark_order(results)
    domains = list(dict.fromkeys(d for d, _ in benches))
    rows = []
    for r in results:
        if r.role != "merge":
            continue
        per = domain_scores(r, benches, metric)
        values = [score(r, b, metric) for _, b in benches]
        method = (r.info.get("merge") or {}).get("mergekit_method", "")
        rows.append((r.label, method, *(per[d] for d in domains), _mean(values)))
    cols = ("merge", "mergekit method", *domains, "avg")
    return Table("merge_table", f"Merge methods by domain ({metric}, %)", cols, tuple(rows))


def _at(r: ModelResult, benches, domain: str, metric: str) -> float | None:
    if domain == "avg":
        return _mean([score(r, b, metric) for _, b in benches])
    return domain_scores(r, benches, metric)[domain]


def diff_table(results: Sequence[ModelResult], metric: str) -> Table:
    """Per domain and overall: mixed, the best merge there, and mixed - best merge."""
    benches = benchmark_order(results)
    mixed = [r for r in results if r.role == "mixed"]
    merges = [r for r in results if r.role == "merge"]
    title = f"Mixed - best merge per domain ({metric}, points)"
    if not mixed or not merges:
        return Table("diff_table", title, ("domain",), (), ("needs a mixed model and a merge",))
    mix = mixed[0]
    rows = []
    for domain in [*dict.fromkeys(d for d, _ in benches), "avg"]:
        scored = [
            (v, m.label) for m in merges if (v := _at(m, benches, domain, metric)) is not None
        ]
        # the first of equal scores, in row order (as the cost table picks its merge)
        best, best_label = max(scored, key=lambda x: x[0]) if scored else (None, "")
        mv = _at(mix, benches, domain, metric)
        diff = mv - best if mv is not None and best is not None else None
        rows.append((domain, mv, best_label, best, diff))
    cols = ("domain", mix.label, "best merge", "best merge score", "mixed - best merge")
    return Table("diff_table", title, cols, tuple(rows))


def cost_table(
    results: Sequence[ModelResult], extra_runs: Mapping[str, str], metric: str = "avg_at_k"
) -> Table:
    """Device-seconds per run; separate arm = experts + the best merge, mixed arm = mixed run."""
    runs = {r.label: r.info["run_dir"] for r in results if r.info.get("run_dir")}
    runs.update(extra_runs)
    role = {r.label: r.role for r in results}
    merges = {r.label: r.info["path"] for r in results if r.role == "merge" and "path" in r.info}
    rows: list[tuple[Cell, ...]] = []
    for label, path in {**runs, **merges}.items():
        cost = run_cost(path) or {}
        rows.append(
            (
                label,
                role.get(label, "other"),
                cost.get("device_seconds"),
                cost.get("rl_device_seconds"),
            )
        )
    experts = [path for label, path in runs.items() if role.get(label) == "expert"]
    mixed = [path for label, path in runs.items() if role.get(label) == "mixed"]
    benches = benchmark_order(results)
    ranked = sorted(
        (r for r in results if r.label in merges),
        key=lambda r: -(_at(r, benches, "avg", metric) or 0.0),
    )
    merge_used = [(r.label, merges[r.label]) for r in ranked[:1]]
    separate = sum_compute([*experts, *(path for _, path in merge_used)])
    together = sum_compute(mixed)
    keys = ("device_seconds", "rl_device_seconds")
    ratios = [together[k] / separate[k] if mixed and separate[k] > 0 else None for k in keys]
    rows += [
        ("separate (experts + merge)", "total", *(separate[k] for k in keys)),
        ("mixed (total)", "total", *(together[k] for k in keys)),
        ("mixed / separate", "ratio", *ratios),
    ]
    merge_note = f" + merge {merge_used[0][0]}" if merge_used else ""
    notes = (
        f"separate arm: {len(experts)} expert run(s){merge_note} (the best merge by avg)",
        "device-seconds = processes x wall seconds from each run's summary.json; "
        "rl_device_seconds counts the RL steps only (no SFT warm start, no held-out evals)",
    )
    cols = ("run", "role", "device_seconds", "rl_device_seconds")
    return Table("cost_table", "Compute (device-seconds)", cols, tuple(rows), notes)


def fmt(cell: Cell) -> str:
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


def write_table(table: Table, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, csv_path = folder / f"{table.name}.md", folder / f"{table.name}.csv"
    md.write_text(to_markdown(table))
    with csv_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(table.columns)
        writer.writerows(["" if c is None else c for c in row] for row in table.rows)
    return [md, csv_path]
