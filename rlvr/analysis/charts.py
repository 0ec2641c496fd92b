"""The output analyses' PNG figures: stacked bars of newly solved items."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rlvr.analysis.figures import _pyplot


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
