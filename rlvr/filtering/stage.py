"""The study's ``filter`` data stage: the SFT model's pass-rate filter, and the GRPO arms train on what it keeps.

``study.stages=[filter]``: one ``rlvr.filter`` stage after the SFT stage (or on
``study.sft_model``) over the study's domains, writing ``<study>/filter/<domain>.jsonl``, the
histogram and the counts. Its settings are the ``filter`` group (``filter.k=...`` on the study's
command line or in the experiment file), part of the stage's config hash. Every expert and
mixed arm of the study waits for it and trains on its rows: per domain
``domains.<d>.train_tasks=[rows_<d>]`` and ``domains.<d>.data_files=[<study>/filter/<d>.jsonl]``,
so a changed band retrains them. The stage adds no model of its own to the evaluation.
"""

from __future__ import annotations

from rlvr.filtering.outputs import COUNTS, HISTOGRAM
from rlvr.study.plan import (
    PlanContext,
    Stage,
    _domain_option,
    quote,
    quoted_list,
    register_data_stage,
)


def filter_stage(ctx: PlanContext) -> tuple[list[Stage], dict[str, tuple[str, ...]]]:
    run, out = ctx.run, ctx.root / "filter"
    domains = run.study.domains
    files = {d: out / f"{d}.jsonl" for d in domains}
    overrides = (
        _domain_option(run, domains),
        f"init_from={quote(ctx.sft.path)}",
        f"filter.out_dir={quote(str(out))}",
        f"hydra.run.dir={quote(str(out))}",
    )
    deps = (ctx.sft.stage,) if ctx.sft.stage else ()
    outputs = (out / COUNTS, out / HISTOGRAM, *files.values())
    stage = Stage("filter", "filter", "rlvr.filter", overrides, deps, out, outputs)
    # data_files=null first: a list does not merge into a {task: paths} mapping set before
    rows = {
        d: (
            f"domains.{d}.train_tasks=[rows_{d}]",
            f"domains.{d}.data_files=null",
            f"domains.{d}.data_files={quoted_list([str(f)])}",
        )
        for d, f in files.items()
    }
    return [stage], rows


register_data_stage("filter", filter_stage)
