"""The study's optional ``filter`` stage: the SFT model's pass-rate filter of every domain's training rows.

``study.stages=[filter]``: one ``rlvr.filter`` stage after the SFT stage (or on
``study.sft_model``) over the study's domains, writing ``<study>/filter/<domain>.jsonl``, the
histogram and the counts. Its settings are ``conf/filter.yaml``'s ``filter`` block (part of the
stage's config hash). The stage adds no model; the experts and the mixed arm of the same study
still train on the unfiltered rows (their configs are checked before the filter has written
anything). To train on the filtered rows, run the study again on the same SFT model with
``study.sft_model=<study>/sft/final`` and, per domain,
``domains.<d>.train_tasks=[rows_<d>] 'domains.<d>.data_files=[<study>/filter/<d>.jsonl]'``.
"""

from __future__ import annotations

from rlvr.filtering.outputs import COUNTS, HISTOGRAM
from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    _domain_option,
    quote,
    register_optional_stage,
)


def filter_stage(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    run, out = ctx.run, ctx.root / "filter"
    overrides = (
        _domain_option(run, run.study.domains),
        f"init_from={quote(ctx.sft.path)}",
        f"filter.out_dir={quote(str(out))}",
        f"hydra.run.dir={quote(str(out))}",
    )
    deps = (ctx.sft.stage,) if ctx.sft.stage else ()
    stage = Stage(
        "filter", "filter", "rlvr.filter", overrides, deps, out, (out / COUNTS, out / HISTOGRAM)
    )
    return [stage], []


register_optional_stage("filter", filter_stage)
