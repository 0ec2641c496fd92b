"""The resource plan: memory per device and step time of every stage, before anything runs."""

from rlvr.planning.shapes import ModelShape, model_shape, shape_from_config
from rlvr.planning.stage_plan import StagePlan, micro_steps, plan_stage, sharded, world_size
from rlvr.planning.table import assumptions, check_fits, format_plan

__all__ = [
    "ModelShape",
    "assumptions",
    "StagePlan",
    "check_fits",
    "format_plan",
    "micro_steps",
    "model_shape",
    "plan_stage",
    "shape_from_config",
    "sharded",
    "world_size",
]
