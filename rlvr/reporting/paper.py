"""The paper view: our scores and runs beside the M2RL paper's published numbers.

``paper_table``: the paper's nine benchmarks in its column order; per model of ours (seeds as
mean ± sd, as in the main table) three rows: ours, the published row of the same role, and
ours - paper. ``paper_not_run``: each benchmark (or model x benchmark) without a score, and
why. ``paper_compute``: our runs' device-hours beside the paper's GPU-hours. The published
numbers ship in ``rlvr/reporting/m2rl_paper/`` (see SOURCE.md there).
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from rlvr.reporting.recovery import recovery
from rlvr.reporting.seeds import ModelGroup, Stat, group_results, split_seed
from rlvr.reporting.tables import Cell, ModelResult, Table, infer_role
from rlvr.runs.accounting import run_cost

PUBLISHED = Path(__file__).with_name("m2rl_paper")
# our benchmark (task) names in the paper's column order; where the paper's column is named
# otherwise, PAPER_COLUMN maps it (our ifeval scores IFEval's strict prompt level)
BENCHMARKS = (
    "aime24",
    "aime25",
    "livecodebench_v5",
    "livecodebench_v6",
    "hle",
    "gpqa_diamond",
    "ifeval",
    "ifbench",
    "mmlu_redux",
)
PAPER_COLUMN = {"ifeval": "ifeval_strict_prompt"}
NOT_RUN = "—"  # a benchmark without a score of ours, or a role the paper did not publish
ROLE_ROW = {"base": "qwen3-4b-base", "sft": "sft", "mixed": "mixed", "distill": "mt_opd"}
EXPERT_RUNS = ("math", "code", "science", "instruction")  # the paper's experts (no agent)


@cache
def published_scores() -> dict[str, dict[str, float]]:
    """Published model row -> {our benchmark name: score in percent} (``main_table.csv``)."""
    with (PUBLISHED / "main_table.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {r["model"]: {b: float(r[PAPER_COLUMN.get(b, b)]) for b in BENCHMARKS} for r in rows}


def published_compute() -> dict[str, tuple[int, float]]:
    """Published run -> (steps, GPU-hours) (``compute.csv``)."""
    with (PUBLISHED / "compute.csv").open(newline="") as fh:
        return {r["run"]: (int(r["steps"]), float(r["gpu_hours"])) for r in csv.DictReader(fh)}


def paper_row(group: ModelGroup) -> str | None:
    """The published row of this model's role, or None when the paper has none (agent)."""
    info = group.first.info
    if group.role == "expert":
        domains = info.get("domains") or [group.label]
        name = domains[0] if len(domains) == 1 else group.label
    elif group.role == "merge":
        name, _ = split_seed((info.get("merge") or {}).get("name", group.label))
    else:
        name = ROLE_ROW.get(group.role, "")
    return name if name in published_scores() else None


def unscorable(summary: Mapping[str, Any]) -> str | None:
    """Why a written summary carries no score (never shown as 0), or None when it does."""
    if summary.get("not_run"):
        return f"not run: {summary['not_run']}"
    if summary.get("prompts") == 0:
        return "its summary scores no prompt"
    statuses = summary.get("status_counts") or {}
    if statuses and set(statuses) == {"error"}:
        return "every verdict was a verifier error"
    return None


def _score(r: ModelResult, bench: str, metric: str) -> float | None:
    s = r.summaries.get(bench)
    if s is None or unscorable(s) or s.get(metric) is None:
        return None
    return 100.0 * float(s[metric])


def _subset_mean(r: ModelResult, benches: Sequence[str], metric: str) -> float | None:
    values = [v for b in benches if (v := _score(r, b, metric)) is not None]
    return statistics.mean(values) if values and len(values) == len(benches) else None


def _cell(value: Stat | float | None) -> Cell:
    missing = value is None or (isinstance(value, Stat) and value.mean is None)
    return NOT_RUN if missing else value


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def paper_table(results: Sequence[ModelResult], metric: str) -> Table:
    """Ours, the paper's and ours - paper per model, the nine benchmarks in the paper's order."""
    rows: list[tuple[Cell, ...]] = []
    for g in group_results(results):
        ours = {b: g.stat(_score, b, metric) for b in BENCHMARKS}
        scored = [b for b in BENCHMARKS if ours[b].mean is not None]
        name = paper_row(g)
        paper = published_scores().get(name or "", {})
        avg = g.stat(_subset_mean, scored, metric) if scored else Stat(None)
        paper_avg = statistics.mean(paper[b] for b in scored) if paper and scored else None
        head = (g.label, g.role, name or NOT_RUN)
        rows += [
            (*head, "ours", *(_cell(ours[b]) for b in BENCHMARKS), _cell(avg)),
            (*head, "paper", *(_cell(paper.get(b)) for b in BENCHMARKS), _cell(paper_avg)),
            (
                *head,
                "ours - paper",
                *(_cell(_minus(ours[b].mean, paper.get(b))) for b in BENCHMARKS),
                _cell(_minus(avg.mean, paper_avg)),
            ),
        ]
    notes = [
        f"ours: {metric} in percent, mean ± sd over seeds; paper: Avg@K as published "
        "(Mosi-AI/M2RL d9807cf); ours - paper: difference of the means",
        f"{NOT_RUN}: no score of ours (see paper_not_run) or no published row for the role "
        "(the paper has no agent expert)",
        "avg: over the benchmarks this model scored, the paper's over the same ones",
        f"K per benchmark (samples per prompt, from the summaries): {_k_used(results)}",
    ]
    if metric != "avg_at_k":
        notes.append(f"the report's metric is {metric}; the published numbers are Avg@K")
    cols = ("model", "role", "paper row", "source", *BENCHMARKS, "avg")
    return Table("paper_table", "Beside the paper (M2RL's nine benchmarks, %)", cols, tuple(rows), tuple(notes))


def _k_used(results: Sequence[ModelResult]) -> str:
    used = {
        b: sorted({int(r.summaries[b]["k"]) for r in results if b in r.summaries and "k" in r.summaries[b]})
        for b in BENCHMARKS
    }
    return ", ".join(f"{b} {'/'.join(map(str, ks))}" for b, ks in used.items() if ks) or "-"


def planned_evaluations(study: Path) -> dict[str, tuple[str, str, tuple[str, ...]]] | None:
    """Model label -> (evaluation stage, its status, its benchmarks) from ``study.json``;
    None when the folder has no study record (plain ``rlvr.evaluate`` output)."""
    try:
        stages = json.loads((study / "study.json").read_text()).get("stages", {})
    except (OSError, ValueError):
        return None
    out = {}
    for name, entry in stages.items():
        if entry.get("kind") != "eval":
            continue
        tasks = next((a for a in entry.get("command", []) if a.startswith("eval.tasks=")), "")
        benches = tuple(t for t in tasks.partition("=")[2].strip("[]").split(",") if t)
        status = entry.get("status") or "unknown"
        if blocked := entry.get("blocked_by"):
            status += f" (after {', '.join(blocked) if isinstance(blocked, list) else blocked})"
        out[Path(entry.get("out_dir", name)).name] = (name, status, benches)
    return out


def not_run_table(study: Path, results: Sequence[ModelResult]) -> Table:
    """Every benchmark of the paper some model of ours has no score on, and why."""
    plan = planned_evaluations(study)
    labels = list(dict.fromkeys([r.label for r in results] + list(plan or {})))
    by_label = {r.label: r for r in results}
    rows: list[tuple[Cell, ...]] = []
    for bench in BENCHMARKS:
        reasons: dict[str, list[str]] = {}
        for label in labels:
            if why := _why_missing(bench, by_label.get(label), (plan or {}).get(label), plan):
                reasons.setdefault(why, []).append(label)
        for why, who in reasons.items():
            models = "all" if len(who) == len(labels) else ", ".join(who)
            rows.append((bench, models, why))
    notes = () if rows else ("every model of the study scored all nine benchmarks",)
    cols = ("benchmark", "models", "reason")
    return Table("paper_not_run", "Paper benchmarks not run", cols, tuple(rows), notes)


def _why_missing(
    bench: str,
    result: ModelResult | None,
    planned: tuple[str, str, tuple[str, ...]] | None,
    plan: Mapping[str, Any] | None,
) -> str | None:
    summary = result.summaries.get(bench) if result else None
    if summary is not None:
        return unscorable(summary)
    if plan is None:
        return "no evaluation summary (not in the evaluated tasks, or its evaluation failed)"
    if planned is None or bench not in planned[2]:
        return "not in the study's eval tasks (eval.tasks / study.benchmarks)"
    stage, status, _ = planned
    return f"in the study's eval tasks, no summary: stage {stage} {status}"


def paper_compute(results: Sequence[ModelResult], extra_runs: Mapping[str, str]) -> Table:
    """Per run: the paper's steps and GPU-hours beside ours (device-hours, mean per seed)."""
    runs = {r.label: r.info["run_dir"] for r in results if r.info.get("run_dir")}
    runs.update(extra_runs)
    role = {r.label: r.role for r in results}
    domains = {r.label: r.info.get("domains") or [] for r in results}
    ours: dict[str, list[tuple[float | None, float, float]]] = {}
    for label, path in runs.items():
        kind = role.get(label) or infer_role(label, {}, {})
        stem, _ = split_seed(label)
        name = {"mixed": "mixed", "distill": "mt_opd"}.get(kind)
        if kind == "expert":
            doms = domains.get(label) or [stem]
            name = doms[0] if len(doms) == 1 else stem
        if name and (facts := _run_facts(path)):
            ours.setdefault(name, []).append(facts)
    published = published_compute()
    names = [*EXPERT_RUNS, *(n for n in ours if n not in (*EXPERT_RUNS, "mixed", "mt_opd"))]
    names += ["mixed", "mt_opd"]
    paper_experts = sum(published[n][1] for n in EXPERT_RUNS)
    our_experts = sum(_mean3(ours[n])[2] for n in ours if n not in ("mixed", "mt_opd"))
    rows: list[tuple[Cell, ...]] = []
    for name in names:
        steps, hours = published.get(name, (None, None))
        mine = ours.get(name, [])
        our_steps, our_h, our_rl = _mean3(mine) if mine else (None, None, None)
        cells = (
            steps,
            hours,
            _pct(hours, paper_experts),
            len(mine) or None,
            our_steps,
            our_h,
            our_rl,
            _pct(our_rl, our_experts),
        )
        rows.append((name, *map(_cell, cells)))
    total = (None, paper_experts, 100.0, None, None, None, our_experts or None, 100.0 if our_experts else None)
    rows.append(("experts (sum)", *map(_cell, total)))
    notes = (
        "paper: steps and GPU-hours of each run (Mosi-AI/M2RL d9807cf), four experts; ours: "
        "mean per seed of each run's device-hours (processes x wall time) and of its RL steps' "
        "device-hours, the figure the paper's GPU-hours compare to",
        "share of experts: a run's hours over the sum of the experts' (ours: every expert "
        "the study trained, agent included); MT-OPD runs after the experts, so it costs them too",
    )
    cols = (
        "run",
        "paper steps",
        "paper GPU-hours",
        "paper share of experts (%)",
        "our runs",
        "our steps",
        "our device-hours",
        "our RL device-hours",
        "our share of experts (%)",
    )
    return Table("paper_compute", "Compute beside the paper (hours)", cols, tuple(rows), notes)


def _run_facts(path: str) -> tuple[float | None, float, float] | None:
    """(RL steps, device-hours, RL device-hours) of one run folder; None if unrecorded."""
    cost = run_cost(path)
    if cost is None:
        return None
    try:
        steps = json.loads((Path(path) / "summary.json").read_text())["rl"]["steps"]
    except (OSError, ValueError, KeyError, TypeError):
        steps = None
    return steps, cost["device_seconds"] / 3600, cost["rl_device_seconds"] / 3600


def _mean3(facts: Sequence[tuple[float | None, float, float]]) -> tuple[float | None, float, float]:
    steps = [s for s, _, _ in facts if s is not None]
    return (
        statistics.mean(steps) if steps else None,
        statistics.mean(h for _, h, _ in facts),
        statistics.mean(rl for _, _, rl in facts),
    )


def _pct(part: float | None, whole: float) -> float | None:
    return 100.0 * part / whole if part is not None and whole else None


def paper_view(
    study: Path, results: Sequence[ModelResult], metric: str, extra_runs: Mapping[str, str]
) -> tuple[Table, Table, Table, Table]:
    """The four tables of the paper view, in the report's order."""
    return (
        paper_table(results, metric),
        not_run_table(study, results),
        paper_compute(results, extra_runs),
        paper_recovery(),
    )


# which of the paper's experts answers each benchmark in its routed row (agent has no expert there)
ROUTED_EXPERT = {
    "aime24": "math",
    "aime25": "math",
    "livecodebench_v5": "code",
    "livecodebench_v6": "code",
    "hle": "science",
    "gpqa_diamond": "science",
    "mmlu_redux": "science",
    "ifeval": "instruction",
    "ifbench": "instruction",
}


def paper_recovery() -> Table:
    """The paper's own routed-experts row and each published arm's recovery of the experts'
    gains, per domain (the mean of its benchmarks) and macro-averaged, from ``main_table.csv``."""
    published = published_scores()
    domains = list(dict.fromkeys(ROUTED_EXPERT.values()))

    def domain_mean(row: Mapping[str, float], domain: str) -> float:
        return statistics.mean(row[b] for b, d in ROUTED_EXPERT.items() if d == domain)

    routed = {d: domain_mean(published[d], d) for d in domains}
    start = {d: domain_mean(published["sft"], d) for d in domains}
    rows: list[tuple[Cell, ...]] = [
        (
            "routed experts",
            "reference",
            *(round(routed[d], 2) for d in domains),
            round(statistics.mean(routed.values()), 2),
        ),
        ("sft", "start", *(round(start[d], 2) for d in domains), round(statistics.mean(start.values()), 2)),
    ]
    for name in ("mixed", "average", "task_arithmetic", "ties", "ties_dare", "ta_dare", "sce", "mt_opd"):
        values = {
            d: recovery({None: domain_mean(published[name], d)}, {None: start[d]}, {None: routed[d]}, None)
            for d in domains
        }
        gains = {d: v for d, v in values.items() if v is not None}
        cells = [round(gains[d], 1) if d in gains else None for d in domains]
        rows.append((name, "published", *cells, round(statistics.mean(gains.values()), 1)))
    experts = "; ".join(f"{d}: {', '.join(b for b, e in ROUTED_EXPERT.items() if e == d)}" for d in domains)
    notes = (
        f"the paper's routed row: each benchmark answered by its domain's expert ({experts}); "
        "domain score: the mean of its benchmarks; recovery = (arm − sft) / (routed − sft) in %",
    )
    title = "The paper's recovery of its experts' gains (routed and sft rows: scores, %)"
    return Table("paper_recovery", title, ("model", "role", *domains, "macro"), tuple(rows), notes)
