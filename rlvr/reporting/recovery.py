"""How much of the experts' gain each arm keeps: the routed-experts reference, recovery, forgetting.

Routed experts (after Open-MOPD, arXiv 2608.19098): each domain's prompts answered by that
domain's own RL expert, so its score on domain d is expert d's score on d; it costs no run, since
the study evaluates every expert on every domain. An arm's recovery on d is
(arm − SFT) / (routed − SFT): 100% keeps all of the expert's gain over the SFT model, 0% none,
below 0 ends under the SFT model. Recovery is taken seed by seed (seed s of the arm against the
seed-s experts that made or match it) and macro-averaged over the domains where it is defined:
an expert that moved its domain by less than ``MIN_GAIN`` points leaves no gain to recover there.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from rlvr.reporting.seeds import ModelGroup, Seed, Stat, group_results, seed_rank
from rlvr.reporting.tables import ModelResult, Table, benchmark_order, domain_scores

ARM_ROLES = ("mixed", "merge", "distill", "cascade", "adaptive")
# points: an expert that gained less leaves recovery undefined on its domain. On the embedded
# study the seed-to-seed sd of a domain's score reaches 2-3 points, and a 1-point gain turned a
# 20-point merge loss into "-1,000%"
MIN_GAIN = 3.0
PerSeed = dict[Seed, float]


def expert_domain(group: ModelGroup) -> str | None:
    """The one domain an expert trained on (its run's ``domains``, else its label)."""
    domains = group.first.info.get("domains") or [group.label]
    return domains[0] if group.role == "expert" and len(domains) == 1 else None


def _scores(group: ModelGroup, benches, metric: str) -> dict[str, PerSeed]:
    """domain -> seed -> score of this model."""
    out: dict[str, PerSeed] = {}
    for seed, result in group.members.items():
        for domain, value in domain_scores(result, benches, metric).items():
            if value is not None:
                out.setdefault(domain, {})[seed] = value
    return out


def _at_seed(values: PerSeed, seed: Seed) -> float | None:
    """The value of ``seed``, or of the model's only, unseeded member (an SFT model shared by
    every seed)."""
    if seed in values:
        return values[seed]
    return values.get(None) if len(values) == 1 else None


def routed(groups: Sequence[ModelGroup], benches, metric: str) -> dict[str, PerSeed]:
    """domain -> seed -> the domain's expert's score there (the first expert of each domain)."""
    out: dict[str, PerSeed] = {}
    for g in groups:
        domain = expert_domain(g)
        if domain is not None and domain not in out:
            out[domain] = _scores(g, benches, metric).get(domain, {})
    return out


def recovery(arm: PerSeed, start: PerSeed, reference: PerSeed, seed: Seed) -> float | None:
    """(arm − start) / (reference − start) at ``seed``, in percent; None where a value is
    missing or the reference gained under ``MIN_GAIN`` points."""
    a, s, r = _at_seed(arm, seed), _at_seed(start, seed), _at_seed(reference, seed)
    if a is None or s is None or r is None or abs(r - s) < MIN_GAIN:
        return None
    return 100.0 * (a - s) / (r - s)


def _per_seed_recovery(
    arm: dict[str, PerSeed], start: dict[str, PerSeed], reference: dict[str, PerSeed], domains: Sequence[str]
) -> tuple[dict[str, list[float]], list[float]]:
    """Per domain, the recoveries over the arm's seeds; and per seed, the macro average."""
    seeds = sorted({s for values in arm.values() for s in values}, key=seed_rank)
    per_domain: dict[str, list[float]] = {d: [] for d in domains}
    macro: list[float] = []
    for seed in seeds:
        values = {d: recovery(arm.get(d, {}), start.get(d, {}), reference.get(d, {}), seed) for d in domains}
        for d, v in values.items():
            if v is not None:
                per_domain[d].append(v)
        defined = [v for v in values.values() if v is not None]
        if defined:
            macro.append(statistics.mean(defined))
    return per_domain, macro


def recovery_table(results: Sequence[ModelResult], metric: str) -> Table:
    """The routed-experts row and the SFT row (scores), then every arm's recovery per domain
    and macro-averaged (mean ± sd over seeds)."""
    benches = benchmark_order(results)
    groups = group_results(results)
    title = f"Recovery of the experts' gains ({metric}; routed and sft rows: scores, %)"
    sft = next((g for g in groups if g.role == "sft"), None)
    reference = routed(groups, benches, metric)
    domains = [d for d in dict.fromkeys(d for d, _ in benches) if d in reference]
    if sft is None or not domains:
        return Table("recovery_table", title, ("model",), (), ("needs the SFT model and an expert per domain",))
    start = _scores(sft, benches, metric)
    rows = [
        (
            "routed experts",
            "reference",
            *(Stat.of(reference[d].values()) for d in domains),
            Stat.of(_macro(reference, domains)),
        ),
        ("sft", "start", *(Stat.of(start.get(d, {}).values()) for d in domains), Stat.of(_macro(start, domains))),
    ]
    for g in groups:
        if g.role not in ARM_ROLES:
            continue
        per_domain, macro = _per_seed_recovery(_scores(g, benches, metric), start, reference, domains)
        rows.append((g.label, g.role, *(Stat.of(per_domain[d]) for d in domains), Stat.of(macro)))
    notes = (
        "routed experts: each domain's score of that domain's own expert (seed by seed); "
        "recovery = (arm − sft) / (routed − sft) in %, per seed, then mean ± sd over seeds; "
        f"macro: the mean over the domains where the expert gained at least {MIN_GAIN:g} points",
    )
    cols = ("model", "role", *domains, "macro")
    return Table("recovery_table", title, cols, tuple(rows), notes)


def _macro(values: Mapping[str, PerSeed], domains: Sequence[str]) -> list[float]:
    """Per seed, the mean over the domains of the score (seeds every domain has)."""
    seeds = set.intersection(*(set(values.get(d, {})) for d in domains)) if domains else set()
    return [
        statistics.mean(values[d][s] for d in domains) for s in sorted(seeds, key=lambda s: -1 if s is None else s)
    ]


def forgetting_table(results: Sequence[ModelResult], metric: str) -> Table:
    """Every arm and domain where the arm ends below the SFT model beyond the seed spread
    (mean + sd of arm − sft over seeds below 0), or below it at all with one seed."""
    benches = benchmark_order(results)
    groups = group_results(results)
    title = f"Forgetting: arms below the SFT model on a domain ({metric}, points)"
    sft = next((g for g in groups if g.role == "sft"), None)
    if sft is None:
        return Table("forgetting_table", title, ("model",), (), ("needs the SFT model",))
    start = _scores(sft, benches, metric)
    rows = []
    for g in groups:
        if g.role not in ARM_ROLES:
            continue
        for domain, values in _scores(g, benches, metric).items():
            diffs = [v - s for seed, v in values.items() if (s := _at_seed(start.get(domain, {}), seed)) is not None]
            diff = Stat.of(diffs)
            if diff.mean is None or diff.mean >= 0:
                continue
            if diff.sd is None:
                rows.append((g.label, g.role, domain, diff, "below SFT (one seed: no spread)"))
            elif diff.mean + diff.sd < 0:
                rows.append((g.label, g.role, domain, diff, "below SFT beyond the seed spread"))
    notes = ("arm − sft per seed, mean ± sd; listed where mean + sd < 0 (or one seed below)",)
    if not rows:
        notes += ("no arm ends below the SFT model on any domain beyond the seed spread",)
    return Table("forgetting_table", title, ("model", "role", "domain", "arm − sft", "verdict"), tuple(rows), notes)
