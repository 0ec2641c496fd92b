"""Task-vector geometry: pairwise cosines of the models' task vectors (model - SFT), two ways.

Exact: the Gram matrix of the task vectors, summed slice by slice (float64 across slices). Projected: the
paper's view, every task vector mapped to ``m`` dimensions by one seeded random orthogonal
projection (``projection.py``) and the cosines taken there. Both are shown side by side; their
difference is the projection's error (sd about ``sqrt((1 + cos^2) / m)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from rlvr.analysis.figures import geometry_figure
from rlvr.analysis.inventory import ModelSpec
from rlvr.analysis.outputs import Output
from rlvr.analysis.projection import Projection
from rlvr.analysis.weights import Chunk
from rlvr.reporting.tables import Table


def cosines(gram: torch.Tensor) -> torch.Tensor:
    """(k, k) cosines from a Gram matrix; NaN where a vector is zero (a model equal to SFT)."""
    norms = torch.diagonal(gram).clamp(min=0).sqrt()
    outer = norms[:, None] * norms[None, :]
    return torch.where(outer > 0, gram / outer.clamp(min=1e-300), torch.nan)


@dataclass(frozen=True)
class GeometryResult:
    labels: tuple[str, ...]
    gram: torch.Tensor  # (k, k) exact inner products of the task vectors
    projected: torch.Tensor  # (k, m) task vectors after the projection
    params: int

    def exact(self) -> torch.Tensor:
        return cosines(self.gram)

    def approx(self) -> torch.Tensor:
        return cosines(self.projected @ self.projected.T)


class Geometry:
    """Accumulates the exact Gram matrix and the projected task vectors, slice by slice."""

    name = "geometry"

    def __init__(self, models: Sequence[ModelSpec], dim: int = 256, seed: int = 0) -> None:
        self.models = list(models)
        k = len(self.models)
        self.gram = torch.zeros(k, k, dtype=torch.float64)
        self.projection = Projection(k, dim, seed)
        self.params = 0

    def update(self, chunk: Chunk) -> None:
        # float32 products within a slice (sgemm's blocked sums: ~1e-6 relative), float64 across
        self.gram += (chunk.delta @ chunk.delta.T).double()
        self.projection.update(chunk.name, chunk.offset, chunk.delta)
        self.params += chunk.base.numel()

    def result(self) -> GeometryResult:
        labels = tuple(m.label for m in self.models)
        return GeometryResult(labels, self.gram, self.projection.result(), self.params)

    def write(self, out_dir: Path) -> Output:
        r = self.result()
        table = cosine_table(r, self.projection.m)
        return Output(self.name, (table,), (geometry_figure(r, out_dir / "geometry.png"),))


def _value(x: torch.Tensor) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def cosine_table(r: GeometryResult, dim: int) -> Table:
    exact, approx = r.exact(), r.approx()
    rows = []
    for i in range(len(r.labels)):
        for j in range(i + 1, len(r.labels)):
            e, a = _value(exact[i, j]), _value(approx[i, j])
            diff = None if e is None or a is None else a - e
            rows.append((r.labels[i], r.labels[j], e, a, diff))
    norms = ", ".join(f"{label} {math.sqrt(max(0.0, float(r.gram[i, i]))):.4g}" for i, label in enumerate(r.labels))
    return Table(
        "geometry",
        f"Task-vector cosines (model - SFT): exact, and after a random projection to {dim} dims",
        ("model A", "model B", "cosine", f"cosine ({dim} dims)", "projected - exact"),
        tuple(rows),
        (
            f"over {r.params:,} parameters; task-vector norms: {norms}",
            f"projection: seeded orthogonal sparse sign projection; expected error sd "
            f"about {1 / math.sqrt(dim):.3f} at cosine 0",
        ),
    )
