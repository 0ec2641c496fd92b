"""The study's optional ``analyze`` stage: after the models it reads, before the report.

``study.stages=[analyze]`` (on in the embedded study); the report then includes its tables.
"""

from __future__ import annotations

from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    quote,
    quoted_list,
    register_optional_stage,
)


def analyze_stage(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """One stage reading the SFT model and every expert, mixed model, merge and earlier
    optional model of the plan; it adds no model to the evaluation."""
    models = [*ctx.experts.values(), *ctx.mixed.values(), *ctx.merges, *ctx.extra_models]
    out = ctx.root / "analysis"
    overrides = (
        f"analyze.study_dir={quote(str(ctx.root))}",
        f"analyze.base={quote(ctx.sft.path)}",
        f"analyze.models={quoted_list([f'{m.label}={m.path}' for m in models])}",
        f"analyze.out_dir={quote(str(out))}",
    )
    deps = tuple(m.stage for m in (ctx.sft, *models) if m.stage)
    outputs = (out / "analysis.md",)  # written last, once every analysis has written its own
    return [Stage("analyze", "analyze", "rlvr.analyze", overrides, deps, out, outputs)], []


register_optional_stage("analyze", analyze_stage)
