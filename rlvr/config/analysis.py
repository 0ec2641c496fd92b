"""The schema of ``python -m rlvr.analyze``: which analyses run, and each one's settings."""

from __future__ import annotations

from dataclasses import dataclass, field

WEIGHT_ANALYSES = ("footprint", "geometry")
OUTPUT_ANALYSES = ("consistency", "neighbourhood", "kl", "judge")


@dataclass
class ConsistencyConfig:
    solved_at: float = 0.5  # an item is solved when its Avg@k reaches this


@dataclass
class NeighbourhoodConfig:
    preset: str = "task_arithmetic"  # the merge of each pair of experts (conf/merge/<preset>)


@dataclass
class KLConfig:
    prompts: int = 4  # held-out prompts per benchmark
    samples: int = 2  # completions sampled from the model per prompt
    max_new_tokens: int = 64
    temperature: float = 1.0
    batch_size: int = 32


@dataclass
class JudgeConfig:
    completions: int = 8  # labelled completions per domain, half correct where possible
    sources: list[str] = field(default_factory=list)  # whose samples; empty: every model's
    modes: list[str] = field(default_factory=lambda: ["outcome", "process"])
    templates: dict[str, str] = field(default_factory=dict)  # mode -> text with {question} ...
    correct_words: list[str] = field(default_factory=lambda: ["correct", "right", "yes"])
    wrong_words: list[str] = field(default_factory=lambda: ["incorrect", "wrong", "no"])
    # probability: the verdict is the word list holding more of the reply's first-token
    # probability (never unparseable; every model has a preference) | reply: generate up to
    # max_new_tokens and parse the first verdict word (for models that reason first)
    scoring: str = "probability"
    max_new_tokens: int = 16
    max_chars: int = 600  # a judged completion is cut to its last this many characters
    batch_size: int = 32
    seed: int = 0


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
    judge: JudgeConfig = field(default_factory=JudgeConfig)
