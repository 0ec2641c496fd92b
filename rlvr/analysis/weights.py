"""Stream model weights from safetensors shards, tensor by tensor in row slices, bounded in memory.

A model folder holds ``model.safetensors``, or shards named by ``model.safetensors.index.json``
(or, without an index, several ``*.safetensors`` files). ``stream`` yields the same slice of one
tensor from the SFT model and from every other model, as float32: memory holds one slice per
model at a time, whatever the models' sizes.

safetensors maps each file into memory; pages read through a mapping count towards the
process's resident set until it is unmapped. A reader therefore drops its open file after
``mapped_bytes`` have been read through it, so the mapped part stays bounded too.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open

from rlvr.config import ConfigError

log = logging.getLogger(__name__)

INDEX = "model.safetensors.index.json"
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16"})


class ShardedWeights:
    """One model folder's tensors: which file holds each, its shape; reads row slices."""

    def __init__(self, folder: str | Path, mapped_bytes: int = 256 << 20) -> None:
        self.folder = Path(folder)
        self.mapped_bytes = mapped_bytes
        self.files = _tensor_files(self.folder)
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        for path in sorted(set(self.files.values())):
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():
                    part = handle.get_slice(name)
                    self.shapes[name] = tuple(part.get_shape())
                    self.dtypes[name] = part.get_dtype()
                    del part  # a slice keeps the file mapped
        self._handle = None
        self._handle_path: Path | None = None
        self._read_since_open = 0

    def float_names(self) -> list[str]:
        return sorted(n for n, d in self.dtypes.items() if d in FLOAT_DTYPES)

    def numel(self, name: str) -> int:
        return math.prod(self.shapes[name])

    def read(self, name: str, start: int, stop: int) -> torch.Tensor:
        """Rows ``start:stop`` of a tensor (its only element for a scalar), flat, as float32."""
        handle = self._open(self.files[name])
        if self.shapes[name]:
            part = handle.get_slice(name)
            values = part[start:stop]
            del part
        else:
            values = handle.get_tensor(name)
        self._read_since_open += values.numel() * values.element_size()
        return values.reshape(-1).to(torch.float32)

    def close(self) -> None:
        self._handle, self._handle_path = None, None

    def _open(self, path: Path):
        if self._handle_path != path or self._read_since_open > self.mapped_bytes:
            self._handle = None  # unmaps the previous file before the next one is mapped
            self._handle = safe_open(str(path), framework="pt")
            self._handle_path, self._read_since_open = path, 0
        return self._handle


def _tensor_files(folder: Path) -> dict[str, Path]:
    index = folder / INDEX
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        return {name: folder / file for name, file in weight_map.items()}
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        hint = " (a LoRA adapter: merge it into its base first)" if (folder / "adapter_config.json").is_file() else ""
        raise ConfigError(f"{folder} holds no safetensors weights{hint}; analyses read full models")
    where: dict[str, Path] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            where.update(dict.fromkeys(handle.keys(), path))
    return where


@dataclass(frozen=True)
class Chunk:
    """The same slice of one tensor in the SFT model and in every model, flat, float32."""

    name: str  # tensor name
    offset: int  # index of the slice's first element in the flattened tensor
    base: torch.Tensor  # (n,)
    models: torch.Tensor  # (k, n)
    delta: torch.Tensor  # (k, n): models - base, the task vectors' slice


def row_slices(shape: Sequence[int], chunk_elements: int) -> Iterator[tuple[int, int, int]]:
    """(start row, stop row, first element) slices of at most ``chunk_elements`` (one row at
    least) covering a tensor of ``shape``."""
    rows = shape[0] if shape else 1
    row_size = math.prod(shape[1:]) if shape else 1
    step = max(1, chunk_elements // max(1, row_size))
    for start in range(0, rows, step):
        yield start, min(rows, start + step), start * row_size


def check_aligned(base: ShardedWeights, models: Sequence[ShardedWeights]) -> list[str]:
    """The base model's float tensors; every model must hold each with the same shape."""
    names = base.float_names()
    for m in models:
        missing = [n for n in names if n not in m.shapes]
        wrong = [n for n in names if n in m.shapes and m.shapes[n] != base.shapes[n]]
        if missing or wrong:
            raise ConfigError(
                f"{m.folder} does not match the SFT model {base.folder}: "
                f"missing {missing[:3]}, other shapes {wrong[:3]}; analyses compare models "
                "of one architecture"
            )
        if extra := sorted(set(m.float_names()) - set(names)):
            log.warning("%s: tensors absent from the SFT model are skipped: %s", m.folder, extra)
    return names


def stream(base: ShardedWeights, models: Sequence[ShardedWeights], chunk_elements: int = 1 << 21) -> Iterator[Chunk]:
    """Every float tensor of the SFT model, in name order, slice by slice across all models."""
    for name in check_aligned(base, models):
        for start, stop, offset in row_slices(base.shapes[name], chunk_elements):
            ref = base.read(name, start, stop)
            stacked = torch.empty(len(models), ref.numel(), dtype=torch.float32)
            for i, m in enumerate(models):
                stacked[i] = m.read(name, start, stop)
            yield Chunk(name, offset, ref, stacked, stacked - ref)
    for reader in (base, *models):
        reader.close()
