"""M2RL's six merge methods and the RL-aware RAM pair as named mergekit presets, and resolution
of a method name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MergePreset:
    """A mergekit method with the parameters the study uses for it."""

    method: str
    params: Mapping[str, Any] = field(default_factory=dict)


# M2RL merge settings: base = SFT model; TA weight 1.0 each, summed without normalisation;
# TIES keeps the top 20% of each task vector; DARE drops 20% at random and rescales.
PRESETS: dict[str, MergePreset] = {
    "average": MergePreset("linear", {"weight": 1.0, "normalize": True}),
    "task_arithmetic": MergePreset("task_arithmetic", {"weight": 1.0, "normalize": False}),
    "ties": MergePreset("ties", {"density": 0.2, "weight": 1.0}),
    "ties_dare": MergePreset("dare_ties", {"density": 0.8, "weight": 1.0, "rescale": True}),
    "ta_dare": MergePreset("dare_linear", {"density": 0.8, "weight": 1.0, "rescale": True, "normalize": False}),
    "sce": MergePreset("sce", {"select_topk": 1.0}),
    # RAM (arXiv 2601.13572): RL changes few weights, so a weight only one expert changed keeps
    # that expert's whole change (an average would dilute it by the number of experts); weights
    # several changed are averaged over those that changed them. "Changed": |delta| > epsilon.
    "ram": MergePreset("ram", {"epsilon": 1e-5}),
    # RAM+ (tensor-local): each tensor's unique changes are scaled up by 1 + r * min(rho, alpha),
    # rho = shared / unique changed weights of that expert in that tensor.
    "ramplus_tl": MergePreset("ramplus_tl", {"r": 0.1, "alpha": 0.2, "epsilon": 1e-5}),
}


def _base_policies() -> dict[str, str]:
    from mergekit.merge_methods.registry import registered_methods

    return {m.spec.name: m.spec.contract.base.value for m in registered_methods()}


def base_policy(method: str) -> str:
    """mergekit's base-model policy for a method: required | optional | ignored | forbidden."""
    return _base_policies()[method]


def resolve(method: str, params: Mapping[str, Any] | None = None) -> MergePreset:
    """A preset by study name (its params overridden by ``params``) or any mergekit method."""
    extra = dict(params or {})
    preset = PRESETS.get(method)
    if preset is not None:
        return MergePreset(preset.method, {**preset.params, **extra})
    known = sorted(_base_policies())
    if method not in known:
        raise ValueError(
            f"unknown merge method {method!r}; presets: {', '.join(PRESETS)}; mergekit methods: {', '.join(known)}"
        )
    return MergePreset(method, extra)
