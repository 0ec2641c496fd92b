"""Analyses by name (``analyze.analyses=[...]``): how each is built, and the pass that feeds them.

A weight analysis takes one ``update(chunk)`` per tensor slice and ``write``s its tables and
figure at the end; every weight analysis shares one streaming pass over the models. An output
analysis reads the study's evaluations (``<study>/eval``) and may load models to generate: its
builder checks its inputs (no model loaded), its ``write`` does the work, after the weight pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from rlvr.analysis.consistency import SkillConsistency
from rlvr.analysis.evaluations import load as load_evaluations
from rlvr.analysis.footprint import Footprint
from rlvr.analysis.geometry import Geometry
from rlvr.analysis.inventory import ModelSpec
from rlvr.analysis.judge import SelfVerification
from rlvr.analysis.kl import PolicyKL
from rlvr.analysis.neighbourhood import Neighbourhood
from rlvr.analysis.outputs import Output
from rlvr.analysis.weights import Chunk, ShardedWeights, stream
from rlvr.config import AnalyzeConfig, ConfigError, RunConfig


class WeightAnalysis(Protocol):
    name: str

    def update(self, chunk: Chunk) -> None: ...

    def write(self, out_dir: Path) -> Output: ...


Builder = Callable[[AnalyzeConfig, Sequence[ModelSpec]], WeightAnalysis]
ANALYSES: dict[str, Builder] = {
    "footprint": lambda c, models: Footprint(models, c.eta),
    "geometry": lambda c, models: Geometry(models, c.projection_dim, c.seed),
}


class OutputAnalysis(Protocol):
    name: str

    def write(self, out_dir: Path) -> Output: ...


OutputBuilder = Callable[[RunConfig, Path], OutputAnalysis]
OUTPUT_ANALYSES: dict[str, OutputBuilder] = {
    "consistency": lambda run, study: SkillConsistency(
        load_evaluations(study, "consistency"), run.analyze.consistency.solved_at
    ),
    "neighbourhood": lambda run, study: Neighbourhood(
        load_evaluations(study, "neighbourhood"), study, run.report.metric
    ),
    "kl": lambda run, study: PolicyKL(run, load_evaluations(study, "kl")),
    "judge": lambda run, study: SelfVerification(run, load_evaluations(study, "judge")),
}


def known() -> list[str]:
    return [*ANALYSES, *OUTPUT_ANALYSES]


def check(cfg: AnalyzeConfig) -> None:
    """Unknown analyses and impossible settings fail before any weight is read."""
    if not cfg.analyses:
        raise ConfigError(f"analyze.analyses is empty; choose from: {', '.join(known())}")
    if bad := [n for n in cfg.analyses if n not in known()]:
        raise ConfigError(f"analyze.analyses: unknown {bad}; known: {', '.join(known())}")
    if not (cfg.eta > 0 and cfg.projection_dim >= 1 and cfg.chunk_elements >= 1):
        raise ConfigError("analyze.eta, analyze.projection_dim and analyze.chunk_elements must be positive")


def weight_names(cfg: AnalyzeConfig) -> list[str]:
    return [n for n in cfg.analyses if n in ANALYSES]


def build(cfg: AnalyzeConfig, models: Sequence[ModelSpec]) -> list[WeightAnalysis]:
    check(cfg)
    return [ANALYSES[name](cfg, models) for name in weight_names(cfg)]


def build_outputs(run: RunConfig, study: Path) -> list[OutputAnalysis]:
    """The selected output analyses, their inputs checked (evaluations read, no model loaded)."""
    check(run.analyze)
    return [OUTPUT_ANALYSES[n](run, study) for n in run.analyze.analyses if n in OUTPUT_ANALYSES]


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
