"""The filter's files: kept rows per domain (canonical JSONL), per-row pass rates, histogram, counts.

``<out>/<domain>.jsonl`` holds the kept rows in the canonical schema, loadable back with
``domains.<d>.train_tasks=[rows_<d>] 'domains.<d>.data_files=[<out>/<d>.jsonl]'``;
``pass_rates.jsonl`` one line per row (id, correct of k, outcome), to re-band without sampling;
``pass_rates.png`` the histogram per domain with the band shaded; ``counts.json`` (written
last: its presence marks a finished filter) the counts per domain and in total.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rlvr.filtering.passrate import KEPT, PassBand, RowPass
from tasks.schema import COLUMNS

COUNTS, HISTOGRAM, PASS_RATES = "counts.json", "pass_rates.png", "pass_rates.jsonl"


def _write_lines(path: Path, records: Sequence[dict]) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def write_rows(out: Path, domain: str, rows: Sequence[dict]) -> Path:
    """The kept rows of one domain, canonical columns only, in their loaded order."""
    return _write_lines(out / f"{domain}.jsonl", [{c: r[c] for c in COLUMNS} for r in rows])


def write_pass_rates(out: Path, results: Sequence[RowPass]) -> Path:
    return _write_lines(out / PASS_RATES, [r.to_dict() for r in results])


def write_counts(out: Path, counts: dict) -> Path:
    from rlvr.runs.folders import write_json

    write_json(out / COUNTS, counts)
    return out / COUNTS


def histogram(out: Path, per_domain: dict[str, dict], k: int, band: PassBand, title: str) -> Path:
    """Rows per number of correct samples (0..k), one bar group per count, the band shaded."""
    from rlvr.reporting.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * (k + 1) * max(1, len(per_domain)) ** 0.5), 4))
    width = 0.8 / max(1, len(per_domain))
    for i, (domain, counts) in enumerate(per_domain.items()):
        xs = [j + (i - (len(per_domain) - 1) / 2) * width for j in range(k + 1)]
        ys = [counts["histogram"][str(j)] for j in range(k + 1)]
        ax.bar(xs, ys, width, label=f"{domain} ({counts['kept']} of {counts['rows']} kept)")
    for j in range(k + 1):  # shade the bins the band keeps
        if band.outcome(j / k) == KEPT:
            ax.axvspan(j - 0.5, j + 0.5, color="green", alpha=0.08, zorder=0, lw=0)
    ax.set_xticks(range(k + 1))
    ax.set_xticklabels([f"{j}/{k}" for j in range(k + 1)], fontsize=8)
    ax.set_xlabel(f"correct samples of {k} (pass rate); shaded: kept ({band.text()})")
    ax.set_ylabel("rows")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / HISTOGRAM
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
