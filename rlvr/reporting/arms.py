"""Every arm side by side: the arms table, the cascade's stages, the adaptive weights over steps.

An arm is a way to get one model for every domain: mixed training, the best merge of the
experts, MT-OPD, the cascade and the adaptive mixture (``rlvr.study.arms``). The arms table
puts each one's average beside mixed training and the best merge (seed by seed) and its RL
compute beside the separate experts'. A merge or MT-OPD pays for the experts too, so its
compute is theirs plus its own; the cascade's is the sum of its stages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from rlvr.reporting.seeds import ModelGroup, Stat, group_results, paired_difference, split_seed
from rlvr.reporting.tables import ModelResult, Table, _best, benchmark_order, score_at
from rlvr.runs.accounting import sum_compute

log = logging.getLogger(__name__)

ARM_ROLES = ("mixed", "merge", "distill", "cascade", "adaptive")
CASCADE_STAGE = "cascade@"  # label stem of a cascade stage's model before the last one


def _folder(r: ModelResult) -> str | None:
    """The run (or merge) folder whose summary holds this model's compute."""
    return r.info.get("run_dir") or (r.info.get("path") if r.role == "merge" else None)


def _rl_seconds(folders: Sequence[str]) -> float | None:
    return sum_compute(folders)["rl_device_seconds"] if folders else None


def arms_table(results: Sequence[ModelResult], metric: str) -> Table:
    """Each arm's average, its paired difference to mixed and to the best merge, and its RL
    device-seconds against the separate experts'."""
    groups = group_results(results)
    benches = benchmark_order(results)
    args = (benches, "avg", metric)
    experts = [f for g in groups if g.role == "expert" for r in g.members.values() if (f := _folder(r))]
    merges = [g for g in groups if g.role == "merge"]
    best, _ = _best(merges, *args)
    mixed = next((g for g in groups if g.role == "mixed"), None)
    arms = [g for g in groups if g.role in ARM_ROLES and (g.role != "merge" or g is best)]
    separate = _rl_seconds(experts)
    rows = []
    for g in arms:
        vs_mixed = _versus(g, mixed, args)
        vs_merge = _versus(g, best, args)
        cost = _rl_seconds(_arm_folders(g, results, experts))
        ratio = cost / separate if cost is not None and separate else None
        rows.append((g.label, g.role, g.n, g.stat(score_at, *args), vs_mixed, vs_merge, cost, ratio))
    cols = (
        "arm",
        "role",
        "seeds",
        f"avg {metric}",
        "arm - mixed",
        "arm - best merge",
        "rl_device_seconds",
        "/ separate experts",
    )
    notes = (
        "differences: mean ± sd over the seeds both arms have of (arm seed s - other seed s); "
        f"best merge: {best.label if best else 'none'} (highest mean avg)",
        "rl_device_seconds: RL steps only, every seed summed; a merge and MT-OPD include the "
        "experts they start from, the cascade all of its stages; separate experts: the "
        f"experts' runs alone ({len(experts)} runs)",
    )
    title = f"Arms: every way to one model for all domains ({metric}, %)"
    return Table("arms_table", title, cols, tuple(rows), notes)


def _versus(g: ModelGroup, other: ModelGroup | None, args) -> Stat | None:
    if other is None or other is g:
        return None
    diff, _ = paired_difference(g.values(score_at, *args), other.values(score_at, *args))
    return diff


def _arm_folders(g: ModelGroup, results: Sequence[ModelResult], experts: list[str]) -> list[str]:
    own = [f for r in g.members.values() if (f := _folder(r))]
    if g.role in ("merge", "distill"):
        return [*experts, *own]
    if g.role == "cascade":  # every stage's run of the same seeds
        seeds = set(g.members)
        stages = [
            f for r in results if r.role == "cascade_stage" and split_seed(r.label)[1] in seeds and (f := _folder(r))
        ]
        return [*stages, *own]
    return own


def cascade_table(results: Sequence[ModelResult], metric: str) -> Table:
    """The cascade's model after each stage on every domain (mean over seeds): does a later
    stage undo what an earlier one taught?"""
    groups = group_results(results)
    stages = sorted(
        (g for g in groups if g.role in ("cascade_stage", "cascade")),
        key=lambda g: (g.role == "cascade", _stage_number(g.label)),
    )
    benches = benchmark_order(results)
    domains = list(dict.fromkeys(d for d, _ in benches))
    sft = next((g for g in groups if g.role == "sft"), None)
    rows = []
    for g in [*([sft] if sft and stages else []), *stages]:
        trained = (g.first.info.get("domains") or ["-"])[0] if g.role != "sft" else "-"
        per = [g.stat(score_at, benches, d, metric) for d in domains]
        rows.append((g.label, trained, *per, g.stat(score_at, benches, "avg", metric)))
    note = (
        "each row: the model after that stage (cascade: after the last), trained on the "
        "named domain from the row above; a domain's score falling after a later stage is "
        "what that stage undid"
    )
    title = f"Cascade: every stage on every domain ({metric}, %)"
    return Table("cascade_table", title, ("model", "trained on", *domains, "avg"), tuple(rows), (note,))


def _stage_number(label: str) -> int:
    if label.startswith(CASCADE_STAGE):
        head = label[len(CASCADE_STAGE) :].split("-", 1)[0]
        return int(head) if head.isdigit() else 0
    return 0


def weight_series(run_dir: str | Path) -> dict[str, tuple[list[int], list[float]]]:
    """Per domain: (steps, mixture weight) from a run's metrics.jsonl."""
    from rlvr.reporting.plots import read_metrics

    out: dict[str, tuple[list[int], list[float]]] = {}
    for m in read_metrics(Path(run_dir) / "metrics.jsonl"):
        for key, value in m.items():
            if key.endswith("/mixture_weight") and "step" in m and value is not None:
                steps, values = out.setdefault(key.split("/")[0], ([], []))
                steps.append(int(m["step"]))
                values.append(float(value))
    return out


def weights_plot(results: Sequence[ModelResult], path: Path) -> Path | None:
    """The adaptive runs' domain weights over training steps, one panel per run."""
    runs = [(r.label, f) for r in results if r.role == "adaptive" and (f := _folder(r))]
    series = [(label, s) for label, f in runs if (s := weight_series(f))]
    if not series:
        return None
    from rlvr.reporting.plots import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, len(series), figsize=(4 * len(series), 3), squeeze=False)
    for ax, (label, by_domain) in zip(axes[0], series, strict=True):
        for domain, (steps, values) in by_domain.items():
            ax.plot(steps, values, label=domain)
        ax.set_title(label)
        ax.set_xlabel("step")
        ax.set_ylabel("domain weight")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
