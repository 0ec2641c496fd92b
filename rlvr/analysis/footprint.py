"""Update footprint: the share of weights each model changed from SFT, their overlap, per module.

A weight counts as changed by the paper's rule ``|w - w_sft| > eta * max(|w|, |w_sft|)``
(``eta = 1e-3``: above bf16 rounding). Two models' changed masks overlap by their Jaccard
index ``|A & B| / |A | B|``; independent random masks of densities ``p`` and ``q`` would give
``pq / (p + q - pq)`` in expectation, the baseline the paper sets it against (math-code 0.45,
math-science 0.48, random 0.18).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from rlvr.analysis.figures import footprint_figure
from rlvr.analysis.inventory import ModelSpec
from rlvr.analysis.outputs import Output
from rlvr.analysis.weights import Chunk
from rlvr.reporting.tables import Table

GROUPS = ("attention", "mlp", "embeddings", "norms", "other")
_ATTENTION = ("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("mlp", "feed_forward", "gate_proj", "up_proj", "down_proj", "fc1", "fc2")
_EXACT_COUNT = 1 << 24  # float32 sums of 0/1 are exact below this many terms


def module_group(name: str) -> str:
    """attention | mlp | embeddings | norms | other, from a parameter's name (norms first:
    ``self_attn.q_norm`` is a norm)."""
    n = name.lower()
    if "norm" in n or ".ln_" in n or n.startswith("ln_"):
        return "norms"
    if any(p in n for p in ("embed", "lm_head", "wte", "wpe")):
        return "embeddings"
    if any(p in n for p in _ATTENTION):
        return "attention"
    if any(p in n for p in _MLP):
        return "mlp"
    return "other"


def changed_mask(base: torch.Tensor, models: torch.Tensor, delta: torch.Tensor, eta: float) -> torch.Tensor:
    """(k, n) bool: the paper's rule, for ``models`` (k, n) against ``base`` (n,)."""
    scale = torch.maximum(models.abs(), base.abs()).mul_(eta)
    return delta.abs() > scale


def overlap_counts(mask: torch.Tensor) -> torch.Tensor:
    """(k, k) float64: ``|A_i & A_j|`` (changed counts on the diagonal)."""
    out = torch.zeros(mask.shape[0], mask.shape[0], dtype=torch.float64)
    for start in range(0, mask.shape[1], _EXACT_COUNT):
        part = mask[:, start : start + _EXACT_COUNT].to(torch.float32)
        out += (part @ part.T).double()
    return out


def random_jaccard(p: float, q: float) -> float:
    """Expected Jaccard index of independent random masks with densities ``p`` and ``q``."""
    union = p + q - p * q
    return p * q / union if union > 0 else math.nan


def jaccard(overlap: torch.Tensor) -> torch.Tensor:
    counts = torch.diagonal(overlap)
    union = counts[:, None] + counts[None, :] - overlap
    return torch.where(union > 0, overlap / union.clamp(min=1), torch.nan)


@dataclass(frozen=True)
class FootprintResult:
    labels: tuple[str, ...]
    roles: tuple[str, ...]
    sizes: dict[str, int]  # module group -> parameters in it
    changed: dict[str, torch.Tensor]  # module group -> (k,) changed counts
    overlap: torch.Tensor  # (k, k) |A_i & A_j|

    @property
    def params(self) -> int:
        return sum(self.sizes.values())

    def density(self) -> torch.Tensor:
        return torch.diagonal(self.overlap) / max(1, self.params)

    def jaccard(self) -> torch.Tensor:
        return jaccard(self.overlap)

    def random_jaccard(self) -> torch.Tensor:
        p = self.density().tolist()
        return torch.tensor([[random_jaccard(a, b) for b in p] for a in p], dtype=torch.float64)


class Footprint:
    """Accumulates changed counts per module group and pairwise overlaps, slice by slice."""

    name = "footprint"

    def __init__(self, models: Sequence[ModelSpec], eta: float = 1e-3) -> None:
        self.models, self.eta = list(models), eta
        k = len(self.models)
        self.sizes = dict.fromkeys(GROUPS, 0)
        self.changed = {g: torch.zeros(k, dtype=torch.float64) for g in GROUPS}
        self.overlap = torch.zeros(k, k, dtype=torch.float64)

    def update(self, chunk: Chunk) -> None:
        mask = changed_mask(chunk.base, chunk.models, chunk.delta, self.eta)
        counts = overlap_counts(mask)
        group = module_group(chunk.name)
        self.sizes[group] += chunk.base.numel()
        self.changed[group] += torch.diagonal(counts)
        self.overlap += counts

    def result(self) -> FootprintResult:
        present = [g for g in GROUPS if self.sizes[g]]
        return FootprintResult(
            tuple(m.label for m in self.models),
            tuple(m.role for m in self.models),
            {g: self.sizes[g] for g in present},
            {g: self.changed[g] for g in present},
            self.overlap,
        )

    def write(self, out_dir: Path) -> Output:
        r = self.result()
        tables = (share_table(r, self.eta), jaccard_table(r))
        return Output(self.name, tables, (footprint_figure(r, out_dir / "footprint.png"),))


def share_table(r: FootprintResult, eta: float) -> Table:
    total = r.density()
    rows = tuple(
        (label, role, 100 * float(total[i])) + tuple(100 * float(r.changed[g][i]) / r.sizes[g] for g in r.sizes)
        for i, (label, role) in enumerate(zip(r.labels, r.roles, strict=True))
    )
    sizes = ", ".join(f"{g} {n:,}" for g, n in r.sizes.items())
    return Table(
        "footprint",
        "Update footprint: parameters changed from SFT (%)",
        ("model", "role", "changed %", *(f"{g} %" for g in r.sizes)),
        rows,
        (f"changed: |w - w_sft| > {eta:g} * max(|w|, |w_sft|); parameters: {r.params:,} ({sizes})",),
    )


def jaccard_table(r: FootprintResult) -> Table:
    density, jac, rand = r.density(), r.jaccard(), r.random_jaccard()
    rows = []
    for i in range(len(r.labels)):
        for j in range(i + 1, len(r.labels)):
            ratio = float(jac[i, j] / rand[i, j]) if rand[i, j] > 0 else math.nan
            rows.append(
                (
                    r.labels[i],
                    r.labels[j],
                    100 * float(density[i]),
                    100 * float(density[j]),
                    float(jac[i, j]),
                    float(rand[i, j]),
                    ratio,
                )
            )
    return Table(
        "footprint_jaccard",
        "Overlap of changed weights: Jaccard index against random masks of the same densities",
        ("model A", "model B", "changed A %", "changed B %", "Jaccard", "random", "ratio"),
        tuple(rows),
        ("random: pq / (p + q - pq), the expected Jaccard index of independent random masks",),
    )
