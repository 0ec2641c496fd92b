"""Room for RL: does a model's held-out set leave RL something to learn, per benchmark?

A held-out set shows RL gains only when the starting (SFT) model is neither at chance nor at
its ceiling and its samples disagree: Avg@k inside ``[AVG_LOW, AVG_HIGH]`` and pass@k at least
``HEADROOM`` points above Avg@k (a correct answer is among the samples more often than the
average sample is correct, so reinforcing it can raise Avg@k). On multiple choice, Avg@k must
also stand ``CHANCE_MARGIN`` points above a uniform guess: guessing among 2-4 options passes
at k = 8 almost always, so pass@k - Avg@k alone calls a guessing model roomy (the micro science
set read Avg@8 46.5 / 29.5 / 27.5 against chance 50 / 33 / 25, pass@8 near 95). Scores are in
percent.

Beside the verdict stands greedy accuracy minus Avg@k: how much a sharper policy would gain
without learning anything new. On the tiny model that gap is what short GRPO runs collect:
the study's math set (greedy 10.9 vs Avg@8 9.8, pass@8 48.4) stayed at Avg@8 9.2 after 120
steps while pass@8 fell to 14.1, the samples collapsing onto the greedy answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.reporting.tables import ModelResult, Table, benchmark_order, score

AVG_LOW, AVG_HIGH = 15.0, 70.0  # Avg@k band (%) that leaves room above and below
HEADROOM = 20.0  # pass@k - Avg@k, in points
CHANCE_MARGIN = 5.0  # multiple choice: Avg@k this close to a uniform guess is guessing


def verdict(avg: float, pass_k: float, chance: float | None = None) -> str:
    """``ok`` or the reason the set leaves RL no room."""
    reasons = []
    if chance is not None and avg <= chance + CHANCE_MARGIN:
        reasons.append(f"Avg@k within {CHANCE_MARGIN:g} points of guessing ({chance:.1f}%)")
    if avg < AVG_LOW:
        reasons.append(f"Avg@k below {AVG_LOW:g}%")
    if avg > AVG_HIGH:
        reasons.append(f"Avg@k above {AVG_HIGH:g}%")
    if pass_k - avg < HEADROOM:
        reasons.append(f"pass@k - Avg@k below {HEADROOM:g} points")
    return "; ".join(reasons) or "ok"


def calibration_table(results: Sequence[ModelResult], role: str = "sft") -> Table:
    """One row per (model of ``role``, benchmark): Avg@k, pass@k, headroom and the verdict."""
    rows = []
    for r in (r for r in results if r.role == role):
        for domain, bench in benchmark_order([r]):
            avg, pass_k = score(r, bench, "avg_at_k"), score(r, bench, "pass_at_k")
            if avg is None or pass_k is None:
                continue
            k = _k(r.summaries[bench])
            greedy = score(r, bench, "greedy_accuracy")
            sharpen = None if greedy is None else greedy - avg
            rows.append(
                (r.label, domain, bench, k, avg, pass_k, pass_k - avg, greedy, sharpen)
                + (verdict(avg, pass_k, score(r, bench, "chance")),)
            )
    cols = (
        "model",
        "domain",
        "benchmark",
        "k",
        "Avg@k",
        "pass@k",
        "pass@k - Avg@k",
        "greedy",
        "greedy - Avg@k",
        "room for RL",
    )
    note = (
        f"room for RL: Avg@k in [{AVG_LOW:g}, {AVG_HIGH:g}]% and pass@k at least "
        f"{HEADROOM:g} points above Avg@k, and for multiple choice more than {CHANCE_MARGIN:g} "
        "points above a uniform guess; greedy - Avg@k: what sharpening alone would gain"
    )
    return Table("calibration", f"Room for RL ({role} model, %)", cols, tuple(rows), (note,))


def failing(table: Table) -> list[tuple[Any, ...]]:
    """Rows whose verdict is not ``ok``."""
    return [row for row in table.rows if row[-1] != "ok"]


def _k(summary: Mapping[str, Any]) -> int:
    return int(summary.get("k") or summary.get("decoding", {}).get("k") or 0)
