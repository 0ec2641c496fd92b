"""MT-OPD as an optional study stage: after a seed's experts, distil them into the SFT model.

``study.stages=[mt_opd]``: one ``rlvr.distill`` stage per seed on the mixed prompts, with each
domain's expert of that seed as the domain's teacher.
"""

from __future__ import annotations

from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    _domain_option,
    _training_stage,
    quote,
    register_optional_stage,
)


def mt_opd_stages(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """One ``rlvr.distill`` stage per seed; its model is evaluated like every other."""
    run = ctx.run
    stages, models = [], []
    for seed in run.study.seeds:
        experts = {d: ctx.experts[(d, seed)] for d in run.study.domains}
        name, out = f"mt_opd-seed{seed}", ctx.root / "mt_opd" / f"seed{seed}"
        overrides = [
            _domain_option(run, run.study.domains),
            f"init_from={quote(ctx.sft.path)}",
            f"trainer.seed={seed}",
            "resume=true",
            *(f"++distill.teachers.{d}={quote(e.path)}" for d, e in experts.items()),
        ]
        deps = [s for s in (ctx.sft.stage, *(e.stage for e in experts.values())) if s]
        stages.append(_training_stage(name, "distill", "rlvr.distill", out, overrides, deps))
        models.append(ModelRef(name, str(out / "final"), name))
    return stages, models


register_optional_stage("mt_opd", mt_opd_stages)
