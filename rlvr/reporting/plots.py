"""The study's PNG figures: every model's difference to the SFT model per domain (a heatmap), and
per-domain reward curves.

Seeds: a heatmap cell is the model's mean over its seeds; a reward curve is the mean over a run's
seeds. Curves share one x axis per domain, that domain's completions seen (an expert's 40 steps
and the mixed arm's 200 are not the same amount of a domain's data), smoothed, with the raw
values faint behind.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from rlvr.reporting.seeds import group_results
from rlvr.reporting.tables import ModelResult, benchmark_order, score_at
from tasks.schema import DOMAINS

log = logging.getLogger(__name__)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    return plt


def delta_heatmap(results: Sequence[ModelResult], metric: str, path: Path) -> Path | None:
    """Models (rows) x domains and their average (columns): the model's score minus the SFT
    model's, mean over seeds, in points; red below SFT, blue above, the value in each cell."""
    plt = _pyplot()
    benches = benchmark_order(results)
    groups = [g for g in group_results(results) if g.role not in ("cascade_stage", "base")]
    sft = next((g for g in groups if g.role == "sft"), None)
    if sft is None:
        log.info("no SFT model: difference heatmap skipped")
        return None
    domains = [*dict.fromkeys(d for d, _ in benches), "avg"]
    start = [sft.stat(score_at, benches, d, metric).mean for d in domains]
    rows = [g for g in groups if g is not sft]
    cells = [
        [
            None if (m := g.stat(score_at, benches, d, metric).mean) is None or s is None else m - s
            for d, s in zip(domains, start, strict=True)
        ]
        for g in rows
    ]
    values = [abs(v) for row in cells for v in row if v is not None]
    bound = max(values, default=1.0) or 1.0
    fig, ax = plt.subplots(figsize=(1.1 * len(domains) + 2.5, 0.38 * len(rows) + 1.4))
    grid = [[float("nan") if v is None else v for v in row] for row in cells]
    image = ax.imshow(grid, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    for i, row in enumerate(cells):
        for j, v in enumerate(row):
            ax.text(j, i, "–" if v is None else f"{v:+.1f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(domains)), domains, fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{g.label} ({g.role})" for g in rows], fontsize=8)
    ax.set_title(f"{metric}: model − SFT, points (mean over seeds)", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def read_metrics(path: Path) -> list[dict]:
    """A run's metrics.jsonl (no transformers import, unlike ``rlvr.runs.folders``)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reward_series(run_dir: str | Path, domain: str) -> tuple[list[float], list[float]]:
    """(the domain's completions seen, mean reward) per step from a run's metrics.jsonl: the x
    value sums ``<domain>/count`` over the steps so far (the step itself where a run logged no
    counts)."""
    key = f"rewards/reward_{domain}/mean"
    seen, xs, ys = 0.0, [], []
    for m in read_metrics(Path(run_dir) / "metrics.jsonl"):
        count = m.get(f"{domain}/count")
        seen += float(count) if isinstance(count, int | float) else 0.0
        if key in m and m[key] is not None and "step" in m:
            xs.append(seen if seen > 0 else float(m["step"]))
            ys.append(float(m[key]))
    return xs, ys


def smooth(values: Sequence[float], span: int) -> list[float]:
    """A trailing moving average over ``span`` points (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - span] if i >= span else 0.0)
        out.append(total / min(i + 1, span))
    return out


def mean_series(series: Sequence[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    """The mean over runs, point by point over the points every run has (seeds of one arm log
    the same steps; their x values are averaged)."""
    if not series:
        return [], []
    n = min(len(xs) for xs, _ in series)
    xs = [sum(s[0][i] for s in series) / len(series) for i in range(n)]
    return xs, [sum(s[1][i] for s in series) / len(series) for i in range(n)]


def _plot_arm(ax, run_dirs: Sequence[str], domain: str, label: str, **style) -> None:
    """One arm's curve: the mean over its seeds, raw and faint, smoothed and bold on top."""
    xs, ys = mean_series([reward_series(d, domain) for d in run_dirs])
    if not xs:
        return
    (raw,) = ax.plot(xs, ys, alpha=0.25, linewidth=0.8, **style)
    style.setdefault("color", raw.get_color())
    seeds = f", mean of {len(run_dirs)} seeds" if len(run_dirs) > 1 else ""
    ax.plot(xs, smooth(ys, max(1, len(ys) // 10)), linewidth=2, label=f"{label}{seeds}", **style)


def reward_curves(mixed: Mapping[str, Sequence[str]], experts: Mapping[str, Sequence[str]], path: Path) -> Path | None:
    """Per domain: that domain's single-domain run and the mixed runs, on the domain's
    completions seen.

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
        ax.set_xlabel(f"{domain} completions seen")
        ax.set_ylabel("mean reward")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
