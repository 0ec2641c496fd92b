"""Per-benchmark figures from verdicts: Avg@k, pass@j, greedy accuracy, IFEval levels, chance.

Unbiased pass@j, IFEval's two strict levels, and the accuracy of a uniform guess on multiple
choice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rlvr.evaluation.heldout import mean_pass_at_k


def summarise(rows: Sequence[dict], sampled: list, greedy: list | None, k: int) -> dict[str, Any]:
    """Avg@k (mean score), unbiased pass@j for j = 1, 2, 4, .. k, greedy accuracy, statuses."""
    n = len(rows)
    counts = [(len(vs), sum(v.is_correct for v in vs)) for vs in sampled]
    js = sorted({1, k} | {2**i for i in range(k.bit_length()) if 2**i <= k})
    out: dict[str, Any] = {
        "prompts": n,
        "k": k,
        "avg_at_k": sum(sum(v.score for v in vs) / len(vs) for vs in sampled) / n if n else 0.0,
        "pass_at": {str(j): mean_pass_at_k(counts, j) for j in js},
        "status_counts": dict(Counter(v.status.value for vs in sampled for v in vs)),
    }
    out["pass_at_k"] = out["pass_at"][str(k)]
    out["pass_at_1"] = out["pass_at"]["1"]
    if greedy is not None:
        out["greedy_accuracy"] = sum(vs[0].score for vs in greedy) / n if n else 0.0
    if (chance := guessing_accuracy(rows)) is not None:
        out["chance"] = chance
    if (levels := ifeval_levels(rows, greedy or sampled)) is not None:
        out["ifeval"] = levels
    return out


def ifeval_levels(rows: Sequence[dict], verdicts: list) -> dict[str, float] | None:
    """IFEval's strict prompt- and instruction-level accuracy (and their mean, the figure model
    cards quote) over the first completion of each row, when every row is an ifeval row."""
    from verifiers.ifeval.metrics import counts_of

    if not rows or any(r.get("verifier") != "ifeval" for r in rows):
        return None
    counts = [counts_of(vs[0].extracted) for vs in verdicts]
    if any(c is None for c in counts):
        return None  # a verdict that is not an ifeval summary (e.g. a format gate's)
    prompt = sum(f == t for f, t in counts) / len(counts)
    instruction = sum(f for f, _ in counts) / max(sum(t for _, t in counts), 1)
    return {"prompt_level": prompt, "instruction_level": instruction, "mean": (prompt + instruction) / 2}


def guessing_accuracy(rows: Sequence[dict]) -> float | None:
    """Expected accuracy of a uniform guess when every row is multiple choice (its reference
    names ``num_options``), else None: a score near it says the model picks a letter."""
    from tasks.schema import reference_of

    options = []
    for row in rows:
        try:
            options.append(int(reference_of(row)["num_options"]))
        except (KeyError, TypeError, ValueError):
            return None
    return sum(1 / n for n in options) / len(options) if options and min(options) > 0 else None
