"""A seeded random orthogonal projection of task vectors to ``m`` dimensions, slice by slice.

The paper compares task vectors after an orthogonal random projection to 256 dimensions. A
dense Gaussian ``m x n`` matrix is out of reach in a streaming pass: for a 0.5B model it is
1.3e11 random numbers per analysis (minutes on a GPU, hours on two cores), too large to hold
and costly to regenerate per slice. We use a sparse random orthogonal projection instead
(a CountSketch with orthonormalised rows):

* coordinate ``i`` of the concatenated task vector goes to one row ``h(i)`` of ``P`` with a
  random sign ``s(i)``; row ``j`` is scaled by ``1 / sqrt(n_j)``, ``n_j`` the number of
  coordinates it receives. Rows have disjoint supports, so ``P P^T = I_m`` exactly: an
  orthogonal projection.
* ``E[<Px, Py>] = sum_i x_i y_i / n_h(i)``, which is ``(m / n) <x, y>`` up to the spread of
  the ``n_j`` (nil for large ``n``): the projected cosine estimates the cosine, with standard
  deviation about ``sqrt((1 + cos^2) / m)`` (0.06 at ``m = 256`` for orthogonal vectors), the
  same as a Gaussian projection's. It costs one random code per parameter, not ``m``.
* ``h`` and ``s`` come from numpy's PCG64 seeded by (seed, tensor name, block of 2^16
  elements): every model gets the same ``P``, ``P`` does not depend on how tensors are sliced
  for reading, and nothing of the size of a model is ever held.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

BLOCK = 1 << 16


def _name_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def codes(seed: int, name: str, start: int, stop: int, m: int) -> torch.Tensor:
    """Codes of elements ``start:stop`` of tensor ``name``: ``2 * row + (sign < 0)``."""
    key = _name_key(name)
    dtype = np.int16 if 2 * m <= np.iinfo(np.int16).max else np.int32
    parts = []
    for block in range(start // BLOCK, (stop - 1) // BLOCK + 1):
        rng = np.random.default_rng([seed, key, block])
        values = rng.integers(0, 2 * m, size=BLOCK, dtype=dtype)
        lo, hi = max(start, block * BLOCK), min(stop, (block + 1) * BLOCK)
        parts.append(values[lo - block * BLOCK : hi - block * BLOCK])
    return torch.from_numpy(np.concatenate(parts))


class Projection:
    """Accumulates ``P x`` for ``k`` task vectors, one slice of one tensor at a time."""

    def __init__(self, k: int, m: int = 256, seed: int = 0) -> None:
        self.m, self.seed = m, seed
        self.signed = torch.zeros(k, 2 * m, dtype=torch.float64)  # per row: + and - parts
        self.counts = torch.zeros(2 * m, dtype=torch.float64)

    def update(self, name: str, offset: int, delta: torch.Tensor) -> None:
        """Add a slice: ``delta`` (k, n) holds elements ``offset:offset+n`` of tensor ``name``."""
        c = codes(self.seed, name, offset, offset + delta.shape[1], self.m)
        bins = 2 * self.m
        self.counts += torch.bincount(c, minlength=bins)
        for i in range(delta.shape[0]):
            self.signed[i] += torch.bincount(c, weights=delta[i], minlength=bins).double()

    def result(self) -> torch.Tensor:
        """(k, m): every task vector projected by ``P``."""
        rows = self.counts[0::2] + self.counts[1::2]
        return (self.signed[:, 0::2] - self.signed[:, 1::2]) / rows.clamp(min=1).sqrt()


def matrix(names_sizes: list[tuple[str, int]], m: int, seed: int = 0) -> torch.Tensor:
    """``P`` itself (m, n) for small models: the tensors' elements concatenated in this order."""
    cols = []
    for name, size in names_sizes:
        c = codes(seed, name, 0, size, m).long()
        block = torch.zeros(m, size, dtype=torch.float64)
        block[c // 2, torch.arange(size)] = 1.0 - 2.0 * (c % 2).double()
        cols.append(block)
    p = torch.cat(cols, dim=1)
    return p / p.abs().sum(dim=1, keepdim=True).clamp(min=1).sqrt()
