"""The schema of ``python -m rlvr.analyze``: which analyses run, and each one's settings."""

from __future__ import annotations

from dataclasses import dataclass, field

WEIGHT_ANALYSES = ("footprint", "geometry")
OUTPUT_ANALYSES = ("consistency", "neighbourhood", "kl")


@dataclass
class ConsistencyConfig:
    solved_at: float = 0.5  # an item is solved when its Avg@k reaches this


@dataclass
class NeighbourhoodConfig:
    preset: str = "task_arithmetic"  # the merge of each pair of experts (conf/merge/<preset>)


@dataclass
class KLConfig:
    prompts: int = 8  # held-out prompts per benchmark
    samples: int = 2  # completions sampled from the model per prompt
    max_new_tokens: int = 64
    temperature: float = 1.0
    batch_size: int = 32


@dataclass
class AnalyzeConfig:
    """``python -m rlvr.analyze``: the paper's analyses of a study's models (``rlvr/analysis/``)."""

    study_dir: str | None = None  # None: <paths.output_root>/<experiment>
    analyses: list[str] = field(default_factory=lambda: [*WEIGHT_ANALYSES, *OUTPUT_ANALYSES])
    base: str | None = None  # the SFT model; None: <study>/sft/final
    models: list[str] = field(default_factory=list)  # label=path; empty: the study's models
    out_dir: str | None = None  # None: <study>/analysis
    eta: float = 1e-3  # changed: |w - w_sft| > eta * max(|w|, |w_sft|) (the paper's bf16 rule)
    projection_dim: int = 256
    seed: int = 0  # of the random projection
    chunk_elements: int = 1 << 21  # elements per tensor slice read from each model
    mapped_mb: int = 256  # a weight file is re-opened after this much was read through its map
    consistency: ConsistencyConfig = field(default_factory=ConsistencyConfig)
    neighbourhood: NeighbourhoodConfig = field(default_factory=NeighbourhoodConfig)
    kl: KLConfig = field(default_factory=KLConfig)
