"""The study's PNG figures: per-benchmark grouped bars and per-domain reward curves.

Seeds: a bar is a model's mean over its seeds, with the sd as an error bar; a reward curve is
drawn per seed (thin) with the mean over seeds on top (bold) where a run has several seeds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from rlvr.reporting.seeds import group_results
from rlvr.reporting.tables import ModelResult, benchmark_order, score
from tasks.schema import DOMAINS

log = logging.getLogger(__name__)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    return plt


def bar_plot(results: Sequence[ModelResult], metric: str, path: Path) -> Path:
    """One group of bars per benchmark, one bar per model (mean over seeds, sd as error bar)."""
    plt = _pyplot()
    benches = benchmark_order(results)
    groups = [g for g in group_results(results) if g.role != "cascade_stage"]
    width = 0.8 / max(1, len(groups))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(benches) * max(1, len(groups)) ** 0.5), 4))
    colors = plt.get_cmap("tab20").colors  # 20 distinct colours: models never share one
    for i, g in enumerate(groups):
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(benches))]
        stats = [g.stat(score, b, metric) for _, b in benches]
        ys = [s.mean or 0.0 for s in stats]
        errors = [s.sd or 0.0 for s in stats] if any(s.sd is not None for s in stats) else None
        label = f"{g.label} ({g.role}{f', {g.n} seeds' if g.n >= 2 else ''})"
        ax.bar(xs, ys, width, yerr=errors, capsize=2, label=label, color=colors[i % len(colors)])
    ax.set_xticks(range(len(benches)))
    ax.set_xticklabels([f"{b}\n({d})" for d, b in benches], fontsize=8)
    seeded = any(g.n >= 2 for g in groups)
    ax.set_ylabel(f"{metric} (%" + (", mean ± sd over seeds)" if seeded else ")"))
    ax.set_title("Per-benchmark scores")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def read_metrics(path: Path) -> list[dict]:
    """A run's metrics.jsonl (no transformers import, unlike ``rlvr.runs.folders``)."""
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


def mean_series(series: Sequence[tuple[list[int], list[float]]]) -> tuple[list[int], list[float]]:
    """The mean over runs at the steps every run logged."""
    if not series:
        return [], []
    maps = [dict(zip(steps, values, strict=True)) for steps, values in series]
    steps = sorted(set.intersection(*(set(m) for m in maps)))
    return steps, [sum(m[s] for m in maps) / len(maps) for s in steps]


def _plot_arm(ax, run_dirs: Sequence[str], domain: str, label: str, **style) -> None:
    """One arm's curve: the run itself, or each seed thin and the mean over seeds bold."""
    series = [reward_series(d, domain) for d in run_dirs]
    if len(series) == 1:
        ax.plot(*series[0], label=label, **style)
        return
    for steps, values in series:
        (line,) = ax.plot(steps, values, alpha=0.3, linewidth=0.8, **style)
        style.setdefault("color", line.get_color())  # every seed of an arm in one colour
    ax.plot(*mean_series(series), linewidth=2, label=f"{label} (mean of {len(series)})", **style)


def reward_curves(mixed: Mapping[str, Sequence[str]], experts: Mapping[str, Sequence[str]], path: Path) -> Path | None:
    """Per domain: the mixed run's reward curve next to that domain's single-domain run.

    ``mixed``: label -> run folders (one per seed); ``experts``: domain -> run folders.
    """
    plt = _pyplot()
    domains = sorted(experts, key=lambda d: DOMAINS.index(d) if d in DOMAINS else len(DOMAINS))
    if not domains:
        log.info("no single-domain runs with metrics: reward-curve plot skipped")
        return None
    fig, axes = plt.subplots(1, len(domains), figsize=(3.2 * len(domains), 3), squeeze=False)
    for ax, domain in zip(axes[0], domains, strict=True):
        _plot_arm(ax, experts[domain], domain, f"{domain} only")
        for label, run_dirs in mixed.items():
            _plot_arm(ax, run_dirs, domain, label, linestyle="--")
        ax.set_title(domain)
        ax.set_xlabel("step")
        ax.set_ylabel("mean reward")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
