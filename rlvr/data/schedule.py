"""Mixture schedules: per-domain weights as a function of the training step, piecewise or linear.

A schedule is a list of points ``(step, {domain: weight})``, the first at step 0 and the steps
strictly increasing. Each point's weights are normalised to shares that sum to one.
``piecewise`` holds a point's shares until the next point; ``linear`` moves every share in a
straight line from one point to the next. After the last point its shares hold. Steps are
optimiser steps (``global_step``): the batch trained at step ``s`` (0-based) uses the shares
at ``s``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

KINDS: tuple[str, ...] = ("piecewise", "linear")


@dataclass(frozen=True)
class MixtureSchedule:
    """Validated points: ``shares[i][j]`` is domain ``domains[j]``'s share from ``steps[i]`` on."""

    kind: str
    steps: tuple[int, ...]
    domains: tuple[str, ...]
    shares: tuple[tuple[float, ...], ...]

    @classmethod
    def from_points(
        cls,
        kind: str,
        points: Iterable[tuple[int, Mapping[str, float]]],
        selected: Sequence[str] | None = None,
    ) -> MixtureSchedule:
        """Check and normalise; ``selected`` (the run's domains) must each be named at every
        point. Raises ``ValueError`` naming the point and the fix."""
        points = [(step, dict(weights)) for step, weights in points]
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not a schedule kind; choose one of: {', '.join(KINDS)}")
        if not points:
            raise ValueError("has no points; give at least one, e.g. points=[{step: 0, weights: {math: 1.0}}]")
        steps = [step for step, _ in points]
        if steps[0] != 0:
            raise ValueError(f"starts at step {steps[0]}; the first point must be at step 0 so every step has weights")
        if any(not isinstance(s, int) for s in steps) or any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise ValueError(f"steps {steps} must be integers, increasing, none repeated")
        names = sorted({d for _, w in points for d in w} | set(selected or ()))
        for step, weights in points:
            _check_point(step, weights, selected)
        shares = tuple(_normalise(w, names) for _, w in points)
        return cls(kind, tuple(steps), tuple(names), shares)

    def shares_at(self, step: int) -> tuple[float, ...]:
        """Every domain's share at ``step``, aligned with ``domains``."""
        i = bisect_right(self.steps, step) - 1
        if self.kind == "piecewise" or i + 1 == len(self.steps):
            return self.shares[i]
        t = (step - self.steps[i]) / (self.steps[i + 1] - self.steps[i])
        now, after = self.shares[i], self.shares[i + 1]
        return tuple((1 - t) * a + t * b for a, b in zip(now, after, strict=True))

    def weights_at(self, step: int) -> dict[str, float]:
        return dict(zip(self.domains, self.shares_at(step), strict=True))

    def peak_shares(self) -> tuple[float, ...]:
        """Each domain's largest share at any step (a linear segment peaks at an end)."""
        return tuple(max(column) for column in zip(*self.shares, strict=True))

    def describe(self) -> str:
        """A stable text of the whole schedule (fingerprints of saved sampler state)."""
        rows = ";".join(
            f"{s}:" + ",".join(f"{x:.12f}" for x in row) for s, row in zip(self.steps, self.shares, strict=True)
        )
        return f"{self.kind}|{','.join(self.domains)}|{rows}"


def _check_point(step: int, weights: Mapping[str, float], selected: Sequence[str] | None) -> None:
    if selected is not None:
        extra = sorted(set(weights) - set(selected))
        if extra:
            raise ValueError(
                f"point at step {step} weights {extra}, which the run does not select "
                f"(selected: {', '.join(selected)}); select them with domains=[...] or drop them"
            )
        missing = [d for d in selected if d not in weights]
        if missing:
            raise ValueError(
                f"point at step {step} leaves out {', '.join(missing)}; give every selected "
                "domain a weight at every point (0 pauses a domain)"
            )
    bad = {d: w for d, w in weights.items() if not (math.isfinite(w) and w >= 0)}
    if bad:
        raise ValueError(f"point at step {step} has negative or non-finite weights {bad}")
    if sum(weights.values()) <= 0:
        raise ValueError(f"point at step {step} has weights summing to 0; give one domain a weight")


def _normalise(weights: Mapping[str, float], names: Sequence[str]) -> tuple[float, ...]:
    total = sum(weights.values())
    return tuple(weights.get(d, 0.0) / total for d in names)
