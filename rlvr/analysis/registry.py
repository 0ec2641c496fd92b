"""Analyses by name (``analyze.analyses=[...]``): how each is built, and the pass that feeds them.

A weight analysis takes one ``update(chunk)`` per tensor slice and ``write``s its tables and
figure at the end; every weight analysis shares one streaming pass over the models. Analyses
that read the models' outputs rather than their weights plug in here with a protocol of their
own, run after the weight pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from rlvr.analysis.footprint import Footprint
from rlvr.analysis.geometry import Geometry
from rlvr.analysis.inventory import ModelSpec
from rlvr.analysis.outputs import Output
from rlvr.analysis.weights import Chunk, ShardedWeights, stream
from rlvr.config import AnalyzeConfig, ConfigError


class WeightAnalysis(Protocol):
    name: str

    def update(self, chunk: Chunk) -> None: ...

    def write(self, out_dir: Path) -> Output: ...


Builder = Callable[[AnalyzeConfig, Sequence[ModelSpec]], WeightAnalysis]
ANALYSES: dict[str, Builder] = {
    "footprint": lambda c, models: Footprint(models, c.eta),
    "geometry": lambda c, models: Geometry(models, c.projection_dim, c.seed),
}


def check(cfg: AnalyzeConfig) -> None:
    """Unknown analyses and impossible settings fail before any weight is read."""
    if not cfg.analyses:
        raise ConfigError(f"analyze.analyses is empty; choose from: {', '.join(ANALYSES)}")
    if bad := [n for n in cfg.analyses if n not in ANALYSES]:
        raise ConfigError(f"analyze.analyses: unknown {bad}; known: {', '.join(ANALYSES)}")
    if not (cfg.eta > 0 and cfg.projection_dim >= 1 and cfg.chunk_elements >= 1):
        raise ConfigError(
            "analyze.eta, analyze.projection_dim and analyze.chunk_elements must be positive"
        )


def build(cfg: AnalyzeConfig, models: Sequence[ModelSpec]) -> list[WeightAnalysis]:
    check(cfg)
    return [ANALYSES[name](cfg, models) for name in cfg.analyses]


def weight_pass(
    analyses: Sequence[WeightAnalysis],
    sft: Path,
    models: Sequence[ModelSpec],
    chunk_elements: int = 1 << 21,
    mapped_mb: int = 256,
) -> int:
    """Stream the SFT model and every model once, feeding each slice to every analysis;
    returns the number of parameters read per model."""
    # The mapped budget is shared: with many models each one's open file maps less.
    per_model = max(chunk_elements * 4, (mapped_mb << 20) // (len(models) + 1))
    base = ShardedWeights(sft, per_model)
    readers = [ShardedWeights(m.path, per_model) for m in models]
    params = 0
    for chunk in stream(base, readers, chunk_elements):
        for analysis in analyses:
            analysis.update(chunk)
        params += chunk.base.numel()
    return params
