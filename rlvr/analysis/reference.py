"""In-memory reference of the weight analyses: whole models loaded and flattened, no streaming.

The check of the streaming pass (tests) and the baseline of ``scripts/bench_analyze.py``:
every model is held at once, as one flat float32 vector, so memory grows with size x count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from rlvr.analysis.footprint import GROUPS, changed_mask, module_group, overlap_counts
from rlvr.analysis.projection import codes


@dataclass(frozen=True)
class Flat:
    names: tuple[str, ...]  # float tensors, sorted by name
    sizes: tuple[int, ...]
    vector: torch.Tensor  # every tensor flattened and concatenated, float32


def load_flat(folder: Path, names: Sequence[str] | None = None) -> Flat:
    tensors: dict[str, torch.Tensor] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        tensors.update(load_file(str(path)))
    keep = sorted(names or (n for n, t in tensors.items() if t.is_floating_point()))
    flat = [tensors.pop(n).reshape(-1).to(torch.float32) for n in keep]
    return Flat(tuple(keep), tuple(t.numel() for t in flat), torch.cat(flat))


@dataclass(frozen=True)
class Reference:
    changed: dict[str, torch.Tensor]  # module group -> (k,) changed counts
    overlap: torch.Tensor  # (k, k)
    gram: torch.Tensor  # (k, k) float64
    projected: torch.Tensor  # (k, m)


def analyse(sft: Path, models: Sequence[Path], eta: float = 1e-3, dim: int = 256, seed: int = 0) -> Reference:
    """Footprint counts, overlaps, Gram matrix and projection of whole models at once."""
    base = load_flat(sft)
    stacked = torch.stack([load_flat(m, base.names).vector for m in models])
    delta = stacked - base.vector
    mask = changed_mask(base.vector, stacked, delta, eta)
    group_of = torch.tensor([GROUPS.index(module_group(n)) for n in base.names])
    groups = group_of.repeat_interleave(torch.tensor(base.sizes))
    changed = {g: mask[:, groups == i].sum(dim=1).double() for i, g in enumerate(GROUPS) if (groups == i).any()}
    d64 = delta.double()
    code = torch.cat([codes(seed, n, 0, s, dim) for n, s in zip(base.names, base.sizes, strict=True)])
    code = code.long()
    signed = torch.stack([torch.bincount(code, weights=row, minlength=2 * dim) for row in d64])
    counts = torch.bincount(code, minlength=2 * dim).double()
    rows = (counts[0::2] + counts[1::2]).clamp(min=1).sqrt()
    projected = (signed[:, 0::2] - signed[:, 1::2]) / rows
    return Reference(changed, overlap_counts(mask), d64 @ d64.T, projected)
