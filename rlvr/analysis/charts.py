"""The output analyses' PNG figures: stacked and grouped bars, an asymmetric heatmap, KL vs gain."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from rlvr.analysis.figures import _heatmap, _pyplot


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


def consistency_figure(rows: Sequence[tuple], path: Path) -> Path:
    """Items newly solved over SFT per model: experts one bar, combined models stacked
    inherited (some expert also solves the item) under new."""
    plt = _pyplot()
    labels = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(2 + 0.5 * len(rows), 3.2), layout="constrained")
    xs = range(len(rows))
    expert = [r[2] if r[3] is None else 0 for r in rows]
    inherited = [r[3] or 0 for r in rows]
    new = [r[4] or 0 for r in rows]
    ax.bar(xs, expert, color="0.6", label="expert: newly solved")
    ax.bar(xs, inherited, color="tab:blue", label="inherited from an expert")
    ax.bar(xs, new, bottom=inherited, color="tab:orange", label="new (no expert solves it)")
    ax.set_xticks(list(xs), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("held-out items newly solved over SFT")
    ax.set_title("Skill consistency", fontsize=9)
    ax.legend(fontsize=6)
    return _save(fig, path)


def neighbourhood_figure(values: torch.Tensor, domains: Sequence[str], path: Path) -> Path:
    """Row A, column B: score of merge(A, B) on A's benchmarks minus expert A's (points)."""
    plt = _pyplot()
    k = len(domains)
    fig, ax = plt.subplots(figsize=(2.5 + 0.8 * k, 2 + 0.7 * k), layout="constrained")
    bound = float(values.nan_to_num(0).abs().max()) or 1.0
    scaled = values / bound  # the heatmap's colour range is [-1, 1]; the text is the value
    image = _heatmap(ax, scaled, domains, "merge(A, B) - expert A on A's benchmarks", -1.0, "RdBu")
    for text, v in zip(ax.texts, values.flatten().tolist(), strict=True):
        text.set_text("–" if v != v else f"{v:+.1f}")
    ax.set_ylabel("A (domain scored)")
    ax.set_xlabel("B (expert merged in)")
    fig.colorbar(image, ax=ax, shrink=0.7, label=f"points / {bound:.1f}")
    return _save(fig, path)


def kl_figure(points: Sequence[tuple[str, float, float | None]], path: Path) -> Path:
    """Each model's mean per-token KL from SFT against its change in score over SFT."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 3.4), layout="constrained")
    for label, kl, gain in points:
        if gain is None:
            continue
        ax.scatter([kl], [gain], s=18)
        ax.annotate(label, (kl, gain), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.axhline(0, color="0.7", lw=0.8)
    ax.set_xlabel("KL(model || SFT) per token, held-out prompts")
    ax.set_ylabel("score - SFT's (points, mean of benchmarks)")
    ax.set_title("Policy neighbourhood: distance from SFT vs gain", fontsize=9)
    return _save(fig, path)


def judge_figure(
    labels: Sequence[str],
    accuracy: Sequence[Sequence[float | None]],
    series: Sequence[str],
    base_rate: Sequence[float | None],
    path: Path,
) -> Path:
    """Judge accuracy per model, one bar per (domain, mode) series; base rates as dashes."""
    plt = _pyplot()
    k = max(1, len(series))
    fig, ax = plt.subplots(figsize=(3 + 0.5 * len(labels) * k / 2, 3.4), layout="constrained")
    width = 0.8 / k
    colors = plt.get_cmap("tab20").colors
    for j, name in enumerate(series):
        xs = [i + (j - (k - 1) / 2) * width for i in range(len(labels))]
        ys = [100 * (row[j] or 0.0) for row in accuracy]
        ax.bar(xs, ys, width, label=name, color=colors[j % len(colors)])
        if base_rate[j] is not None:
            ax.hlines(
                100 * base_rate[j],
                xs[0] - width,
                xs[-1] + width,
                colors=[colors[j % len(colors)]],
                linestyles="dashed",
                lw=0.8,
            )
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("judge accuracy (%); dashed: base rate")
    ax.set_title("Self-verification", fontsize=9)
    ax.legend(fontsize=5, ncol=2)
    return _save(fig, path)
