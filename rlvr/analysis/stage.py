"""The study's optional ``analyze`` stage: after the models and evaluations it reads, before the report.

``study.stages=[analyze]`` (on in the embedded study); the report then includes its tables. The
weight analyses wait for the models; the output analyses (consistency, kl, judge) also for
every model's evaluation, and ``neighbourhood`` for the pair merges' evaluations of the
``neighbourhood`` stage (without that stage in the plan it is left out).
"""

from __future__ import annotations

from rlvr.config.analysis import OUTPUT_ANALYSES
from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    eval_stage_name,
    quote,
    quoted_list,
    register_optional_stage,
)


def analyze_stage(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """One stage reading the SFT model and every expert, mixed model, merge and earlier
    optional model of the plan; it adds no model to the evaluation."""
    from rlvr.analysis.pairs import pair_eval_stages

    run = ctx.run
    models = [*ctx.experts.values(), *ctx.mixed.values(), *ctx.merges, *ctx.extra_models]
    wanted = [n for n in run.analyze.analyses if n != "neighbourhood" or "neighbourhood" in run.study.stages]
    out = ctx.root / "analysis"
    overrides = (
        f"analyze.study_dir={quote(str(ctx.root))}",
        f"analyze.base={quote(ctx.sft.path)}",
        f"analyze.models={quoted_list([f'{m.label}={m.path}' for m in models])}",
        f"analyze.out_dir={quote(str(out))}",
        f"analyze.analyses=[{','.join(wanted)}]",
    )
    deps = [m.stage for m in (ctx.sft, *models) if m.stage]
    if any(n in OUTPUT_ANALYSES for n in wanted):
        base = ["base"] if run.study.evaluate_base else []
        deps += [eval_stage_name(label) for label in (*base, "sft", *(m.label for m in models))]
    if "neighbourhood" in wanted:
        deps += pair_eval_stages(ctx)
    outputs = (out / "analysis.md",)  # written last, once every analysis has written its own
    # exclusive: all cores (its KL and judge forwards use them); it waits for every
    # evaluation anyway when it reads their outputs, so it runs last and alone
    stage = Stage(
        "analyze",
        "analyze",
        "rlvr.analyze",
        overrides,
        tuple(deps),
        out,
        outputs,
        exclusive=True,
    )
    return [stage], []


register_optional_stage("analyze", analyze_stage)
