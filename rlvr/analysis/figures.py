"""The analyses' PNG figures: annotated heatmaps of pairwise values, and per-module bars."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from rlvr.analysis.footprint import FootprintResult
    from rlvr.analysis.geometry import GeometryResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    return plt


def _heatmap(ax, values: torch.Tensor, labels: Sequence[str], title: str, vmin: float, cmap: str):
    data = values.double().numpy()
    image = ax.imshow(data, vmin=vmin, vmax=1.0, cmap=cmap)
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_title(title, fontsize=9)
    size = 7 if len(labels) <= 8 else 5
    for i in range(len(labels)):
        for j in range(len(labels)):
            v = data[i, j]
            text = "–" if math.isnan(v) else f"{v:.2f}"
            dark = not math.isnan(v) and abs(v) > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color="white" if dark else "black")
    return image


def footprint_figure(r: FootprintResult, path: Path) -> Path:
    """Left: Jaccard of changed masks (random-mask expectation below the diagonal). Right:
    share changed per module group and model."""
    plt = _pyplot()
    k = len(r.labels)
    jac, rand = r.jaccard(), r.random_jaccard()
    lower = torch.tril(torch.ones(k, k, dtype=torch.bool), diagonal=-1)
    shown = torch.where(lower, rand, jac)
    fig, (left, right) = plt.subplots(1, 2, figsize=(6 + 0.9 * k, 3 + 0.3 * k))
    image = _heatmap(left, shown, r.labels, "Jaccard of changed weights\n(below: random masks)", 0.0, "viridis")
    fig.colorbar(image, ax=left, shrink=0.7)
    groups = ["all", *r.sizes]
    width = 0.8 / max(1, k)
    colors = plt.get_cmap("tab20").colors
    density = r.density()
    for i, label in enumerate(r.labels):
        shares = [100 * float(density[i])]
        shares += [100 * float(r.changed[g][i]) / r.sizes[g] for g in r.sizes]
        xs = [x + (i - (k - 1) / 2) * width for x in range(len(groups))]
        right.bar(xs, shares, width, label=label, color=colors[i % len(colors)])
    right.set_xticks(range(len(groups)), groups, fontsize=8)
    right.set_ylabel("parameters changed from SFT (%)")
    right.set_title("Update footprint per module", fontsize=9)
    right.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def geometry_figure(r: GeometryResult, path: Path) -> Path:
    """Task-vector cosines side by side: exact (left) and after the projection (right)."""
    plt = _pyplot()
    k = len(r.labels)
    fig, axes = plt.subplots(1, 2, figsize=(5 + 1.2 * k, 2.5 + 0.5 * k), layout="constrained")
    dim = r.projected.shape[1]
    for ax, values, title in zip(
        axes, (r.exact(), r.approx()), ("exact", f"random projection to {dim} dims"), strict=True
    ):
        image = _heatmap(ax, values, r.labels, f"Task-vector cosine, {title}", -1.0, "RdBu_r")
    axes[1].set_yticks(range(k), [""] * k)  # the rows are the left panel's
    fig.colorbar(image, ax=list(axes), shrink=0.7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
