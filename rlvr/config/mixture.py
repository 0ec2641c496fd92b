"""The ``mixture`` config group: how a multi-domain run draws its batches (natural, weighted,
scheduled or adaptive shares)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SchedulePointConfig:
    step: int = 0  # optimiser step (global_step) from which these weights apply
    weights: dict[str, float] = field(default_factory=dict)  # every selected domain; 0 pauses one


@dataclass
class MixtureScheduleConfig:
    """Domain weights that change with the training step (``rlvr.data.schedule``); needs
    ``mixture.mode=weighted`` and replaces ``domains.<name>.weight``. The first point is at
    step 0, steps increase; each point's weights are normalised to shares."""

    # none (fixed weights) | piecewise (hold until the next point) | linear (interpolate shares)
    kind: str = "none"
    points: list[SchedulePointConfig] = field(default_factory=list)


@dataclass
class MixtureAdaptiveConfig:
    """``mixture.mode=adaptive`` (``rlvr.data.adaptive``): a UCB bandit over the domains scored by
    each domain's learning signal in recent batches; ``domains.<name>.weight`` are the initial
    shares. Read only in adaptive mode (other modes' stages do not hash it)."""

    signal: str = "abs_advantage"  # abs_advantage | active_groups
    exploration: float = 1.0  # UCB bonus coefficient
    temperature: float = 0.1  # softmax temperature over the UCB scores
    floor: float = 0.05  # least share of every domain, so none starves
    window: int = 8  # recent batches the score reads
    lag: int = 3  # batches between a report and the first batch it steers (>= batches drawn ahead)
    # forgetting guard: a domain whose mean reward over the window fell more than this below its
    # best window so far gets its initial share back as its floor until it recovers (0: off)
    guard_drop: float = 0.05


@dataclass
class MixtureConfig:
    # natural (proportions follow sizes) | weighted (exact per-step quotas) | adaptive (quotas
    # from a bandit over the domains' learning signals)
    mode: str = "natural"
    # weighted only: weights as a function of the step (mixture=scheduled sets kind=piecewise)
    schedule: MixtureScheduleConfig = field(default_factory=MixtureScheduleConfig)
    adaptive: MixtureAdaptiveConfig = field(default_factory=MixtureAdaptiveConfig)
    train_size: int = 2000  # rows drawn per domain from generators; cap for real datasets
    heldout_size: int = 64  # held-out prompts per domain
    # Micro-suite difficulty levels per domain (a level or a list); absent domains use all.
    # Kept outside `domains` so an experiment can set it without selecting the domain.
    difficulty: dict[str, Any] = field(default_factory=dict)
