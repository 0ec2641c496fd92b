"""The optional ``neighbourhood`` study stage: every pair of experts merged, and evaluated on both domains.

``study.stages=[neighbourhood, analyze]``: per seed and unordered pair of domains (A, B), one
``rlvr.merge`` of expert A and expert B onto the SFT model with ``analyze.neighbourhood.preset``
(task arithmetic by default, the paper's TA: SFT + both task vectors), then one
``rlvr.evaluate`` of it on A's and B's benchmarks. Both go under ``<study>/neighbourhood/``
(``merges/<A>+<B>-seed<s>``, ``eval/<A>+<B>-seed<s>``), apart from the study's own merges, so
the report's merge tables do not see them; the ``neighbourhood`` analysis reads them back.
"""

from __future__ import annotations

from itertools import combinations

from rlvr.config import ConfigError
from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    benchmarks,
    eval_stage,
    eval_stage_name,
    merge_stage,
    register_optional_stage,
)

FOLDER = "neighbourhood"


def pair_label(a: str, b: str, seed: int) -> str:
    return f"{a}+{b}-seed{seed}"


def _pairs(ctx: PlanContext) -> list[tuple[str, str, int]]:
    domains = ctx.run.study.domains
    return [(a, b, seed) for seed in ctx.run.study.seeds for a, b in combinations(domains, 2)]


def pair_eval_stages(ctx: PlanContext) -> list[str]:
    """The names of the pair merges' evaluation stages (for the stages that read them)."""
    return [eval_stage_name(pair_label(a, b, s)) for a, b, s in _pairs(ctx)]


def neighbourhood_stages(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """A merge and an evaluation stage per pair; no model joins the study's own evaluation."""
    from rlvr.evaluation.benchmarks import benchmark_domain
    from rlvr.merging.presets import resolve

    run, root = ctx.run, ctx.root / FOLDER
    preset = run.analyze.neighbourhood.preset
    try:
        resolve(preset)  # an unknown preset fails at plan time, with the known names
    except ValueError as err:
        raise ConfigError(f"analyze.neighbourhood.preset: {err}") from None
    names = benchmarks(run)
    stages: list[Stage] = []
    for a, b, seed in _pairs(ctx):
        label = pair_label(a, b, seed)
        experts = [ctx.experts[(a, seed)], ctx.experts[(b, seed)]]
        out = root / "merges" / label
        merge = merge_stage(ctx, f"merge-{label}", preset, experts, seed, out)
        model = ModelRef(label, str(out), merge.name)
        both = [t for t in names if benchmark_domain(t) in (a, b)]
        stages += [merge, eval_stage(run, root, model, both)]
    return stages, []


register_optional_stage("neighbourhood", neighbourhood_stages)
