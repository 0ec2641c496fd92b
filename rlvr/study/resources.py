"""The study's resource plan: every stage planned on the devices its launcher gives it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rlvr.config import RunConfig
from rlvr.planning import StagePlan, plan_stage
from rlvr.study.commands import accelerate_layout
from rlvr.study.plan import Stage


def resource_plan(
    stages: Sequence[Stage], configs: Mapping[str, RunConfig], run: RunConfig
) -> list[StagePlan]:
    """One plan per stage: training stages on ``study.accelerate``'s processes (sharded when it
    is an FSDP config), every other stage on one device."""
    total, sharded, _, _ = accelerate_layout(run.study.accelerate)
    plans = []
    for s in stages:
        processes = total if s.multiprocess else 1
        plans.append(plan_stage(configs[s.name], s.name, s.kind, processes, sharded))
    return plans
