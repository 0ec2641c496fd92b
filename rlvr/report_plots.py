"""The study's PNG figures: per-benchmark grouped bars and per-domain reward curves."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from rlvr.report_tables import ModelResult, benchmark_order, score
from tasks.schema import DOMAINS

log = logging.getLogger(__name__)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    return plt


def bar_plot(results: Sequence[ModelResult], metric: str, path: Path) -> Path:
    """One group of bars per benchmark, one bar per model, in table row order."""
    plt = _pyplot()
    benches = benchmark_order(results)
    width = 0.8 / max(1, len(results))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(benches) * max(1, len(results)) ** 0.5), 4))
    colors = plt.get_cmap("tab20").colors  # 20 distinct colours: models never share one
    for i, r in enumerate(results):
        xs = [j + (i - (len(results) - 1) / 2) * width for j in range(len(benches))]
        ys = [score(r, b, metric) or 0.0 for _, b in benches]
        ax.bar(xs, ys, width, label=f"{r.label} ({r.role})", color=colors[i % len(colors)])
    ax.set_xticks(range(len(benches)))
    ax.set_xticklabels([f"{b}\n({d})" for d, b in benches], fontsize=8)
    ax.set_ylabel(f"{metric} (%)")
    ax.set_title("Per-benchmark scores")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def read_metrics(path: Path) -> list[dict]:
    """A run's metrics.jsonl (no transformers import, unlike ``rlvr.runs``)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reward_series(run_dir: str | Path, domain: str) -> tuple[list[int], list[float]]:
    """(steps, mean reward) of ``rewards/reward_<domain>/mean`` from a run's metrics.jsonl."""
    key = f"rewards/reward_{domain}/mean"
    points = [
        (int(m["step"]), float(m[key]))
        for m in read_metrics(Path(run_dir) / "metrics.jsonl")
        if key in m and m[key] is not None and "step" in m
    ]
    return [s for s, _ in points], [v for _, v in points]


def reward_curves(mixed: Mapping[str, str], experts: Mapping[str, str], path: Path) -> Path | None:
    """Per domain: the mixed run's reward curve next to that domain's single-domain run.

    ``mixed``: label -> run folder; ``experts``: domain -> run folder.
    """
    plt = _pyplot()
    domains = sorted(experts, key=lambda d: DOMAINS.index(d) if d in DOMAINS else len(DOMAINS))
    if not domains:
        log.info("no single-domain runs with metrics: reward-curve plot skipped")
        return None
    fig, axes = plt.subplots(1, len(domains), figsize=(3.2 * len(domains), 3), squeeze=False)
    for ax, domain in zip(axes[0], domains, strict=True):
        steps, values = reward_series(experts[domain], domain)
        ax.plot(steps, values, label=f"{domain} only")
        for label, run_dir in mixed.items():
            steps, values = reward_series(run_dir, domain)
            ax.plot(steps, values, label=label, linestyle="--")
        ax.set_title(domain)
        ax.set_xlabel("step")
        ax.set_ylabel("mean reward")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
