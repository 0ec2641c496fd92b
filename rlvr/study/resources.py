"""The study's resources: each stage's plan, SLURM parameters per kind, time against the budget.

Every stage is planned on the devices its launcher gives it; each stage kind gets the SLURM
parameters it needs; each training stage's estimate is set against its SLURM budget."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.config import RunConfig
from rlvr.planning import StagePlan, model_shape, plan_stage
from rlvr.planning.budget import StageBudget, lost_minutes
from rlvr.planning.stage_plan import TRAINING
from rlvr.study.commands import accelerate_layout, machines
from rlvr.study.plan import Stage


def resource_plan(stages: Sequence[Stage], configs: Mapping[str, RunConfig], run: RunConfig) -> list[StagePlan]:
    """One plan per stage: training stages on ``study.accelerate``'s processes (sharded when it
    is an FSDP config), every other stage on one device."""
    total, sharded, _, _ = accelerate_layout(run.study.accelerate)
    plans = []
    for s in stages:
        processes = total if s.multiprocess else 1
        plans.append(plan_stage(configs[s.name], s.name, s.kind, processes, sharded))
    return plans


# What a stage of each host-side or one-GPU kind needs, where the study's `slurm` would give it
# a whole node (slurm_mem 0, all GPUs): an evaluation runs the model under vLLM on one GPU
# (host memory: the weights it loads and converts, vLLM's processes, the verifiers' workers);
# a merge holds its input models, the base and the result in host memory (EVAL_MEM_GB,
# MERGE_SLACK); a report reads JSON. Other kinds (filter, analyze: they load models, some on a
# GPU) keep study.slurm. study.slurm_by_kind overrides any of these.
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "eval": {"gpus_per_node": 1, "cpus_per_task": 16},
    "merge": {"gpus_per_node": 0, "cpus_per_task": 8},
    "report": {"gpus_per_node": 0, "cpus_per_task": 2, "slurm_mem": "8G", "timeout_min": 60},
}
EVAL_MEM_GB = 64  # beyond the model's own weights (twice: loaded, then handed to vLLM)
MERGE_SLACK = 1.5  # mergekit's temporaries over the models it holds, and 8 GB besides
TRAINING_KINDS = frozenset(TRAINING)


def model_gb(run: RunConfig) -> float:
    """The model's weights in the training dtype (GB), 8 when the shape is unknown."""
    shape = model_shape(run.model)
    if shape is None:
        return 8.0
    width = 2 if run.trainer.bf16 or run.model.dtype in ("bfloat16", "float16") else 4
    return shape.parameters() * width / 1e9


def slurm_by_kind(
    run: RunConfig, stages: Sequence[Stage], configs: Mapping[str, RunConfig]
) -> dict[str, dict[str, Any]]:
    """SLURM parameters per stage kind, over ``study.slurm``: the study's ``slurm_by_kind``,
    and for kinds other than training the defaults above wherever ``study.slurm`` asks for
    more than they need (a whole node's memory, more GPUs or CPUs)."""
    base, chosen = run.study.slurm, run.study.slurm_by_kind
    out: dict[str, dict[str, Any]] = {}
    for s in stages:
        if s.kind in out:
            continue
        own = dict(chosen.get(s.kind, {}))
        if s.kind not in TRAINING_KINDS:
            needs = _needs(s, stages, configs)
            for key, value in needs.items():
                if key not in own and _more(base.get(key), value):
                    own[key] = value
        if own:
            out[s.kind] = own
    return {**{k: dict(v) for k, v in chosen.items()}, **out}


def _needs(stage: Stage, stages: Sequence[Stage], configs: Mapping[str, RunConfig]) -> dict:
    if stage.kind not in KIND_DEFAULTS:  # e.g. filter: samples with the model, like training
        return {}
    needs = dict(KIND_DEFAULTS[stage.kind])
    gb = model_gb(configs[stage.name])
    if stage.kind == "eval":
        needs["slurm_mem"] = f"{math.ceil(2 * gb + EVAL_MEM_GB)}G"
    elif stage.kind == "merge":
        most = max(len(s.deps) for s in stages if s.kind == "merge")  # experts (+ the SFT)
        needs["slurm_mem"] = f"{math.ceil((most + 2) * gb * MERGE_SLACK + 8)}G"
    return needs


def _more(base: Any, need: Any) -> bool:
    """Whether the study-wide value asks for more than the kind needs (0 memory: the node)."""
    if base is None:
        return False
    if isinstance(need, str):  # memory: "64G"; the base's 0 is the whole node
        return str(base) in ("0", "0G") or _gb(base) > _gb(need)
    return isinstance(base, (int, float)) and base > need


def _gb(value: Any) -> float:
    text = str(value).upper().rstrip("B")
    scale = {"K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}.get(text[-1:], 1e-3)  # SLURM: MB
    number = text[:-1] if text[-1:] in "KMGT" else text
    return float(number) * scale


def stage_budgets(
    run: RunConfig,
    stages: Sequence[Stage],
    configs: Mapping[str, RunConfig],
    plans: Sequence[StagePlan],
    by_kind: Mapping[str, Mapping[str, Any]],
) -> list[StageBudget]:
    """Each training stage's estimate against its SLURM budget (stages with a step time)."""
    by_name = {p.stage: p for p in plans}
    budgets = []
    for s in stages:
        p = by_name.get(s.name)
        if not (p and p.step_seconds and s.total_steps and s.kind in TRAINING_KINDS):
            continue
        params = {**run.study.slurm, **by_kind.get(s.kind, {})}
        nodes = machines(s, run.study.accelerate)
        cfg = configs[s.name]
        signal = float(params.get("slurm_signal_delay_s", 90))  # submitit's default
        budgets.append(
            StageBudget(
                s.name,
                s.kind,
                p.processes,
                nodes,
                s.total_steps,
                p.step_seconds,
                float(params.get("timeout_min", 5)),
                int(params.get("slurm_max_num_timeout", 3)),
                cfg.trainer.plan_overhead_min,
                lost_minutes(cfg, p.step_seconds, signal),
                signal,
            )
        )
    return budgets
