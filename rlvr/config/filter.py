"""The schema of ``python -m rlvr.filter``: samples per row and the pass-rate band of the rows kept.

``conf/filter.yaml`` composes the training config's groups against ``FilterRunConfig`` (the run
schema plus ``filter``), so every experiment file and override of ``rlvr.train`` works here.
Once ``RunConfig`` carries a ``filter`` field of its own, ``FilterRunConfig`` and the root file
give way to a ``filter`` group in ``conf/train.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore

from rlvr.config.schemas import ConfigError, RunConfig

FILTER_SCHEMA = "rlvr_filter_schema"


@dataclass
class FilterConfig:
    """Keep the training rows whose pass rate under a model (k samples) lies in a band.

    The band is ``low < p < high`` by default (CHIMERA's RL set: problems the SFT model solves
    sometimes within its samples; always and never solved rows give GRPO no signal);
    ``include_low`` / ``include_high`` close either end.
    """

    k: int = 8  # samples per row
    low: float = 0.0
    high: float = 1.0
    include_low: bool = False  # keep p == low
    include_high: bool = False  # keep p == high
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int | None = None  # None: algo.max_completion_length, as GRPO samples
    batch_size: int = 64
    seed: int = 0
    out_dir: str | None = None  # None: the run folder (hydra.run.dir)


@dataclass
class FilterRunConfig(RunConfig):
    filter: FilterConfig = field(default_factory=FilterConfig)


def register_filter_schema() -> None:
    ConfigStore.instance().store(name=FILTER_SCHEMA, node=FilterRunConfig)


def check_filter(c: FilterConfig) -> None:
    """Fail fast on a band or sampling setting that cannot work, naming the key."""
    if c.k < 1 or c.batch_size < 1:
        raise ConfigError(f"filter.k={c.k} and filter.batch_size={c.batch_size} must be >= 1")
    if not 0.0 <= c.low <= c.high <= 1.0:
        raise ConfigError(
            f"filter.low={c.low} and filter.high={c.high}: need 0 <= low <= high <= 1 "
            "(pass rates are shares of the k samples)"
        )
    if c.low == c.high and not (c.include_low and c.include_high):
        raise ConfigError(
            f"filter.low == filter.high == {c.low} keeps nothing unless both ends are "
            "included: set filter.include_low=true filter.include_high=true, or widen the band"
        )
    if c.temperature <= 0 or not 0 < c.top_p <= 1:
        raise ConfigError("filter.temperature must be > 0 and filter.top_p in (0, 1]")
    if c.max_new_tokens is not None and c.max_new_tokens < 1:
        raise ConfigError(
            "filter.max_new_tokens must be >= 1 (or null: algo.max_completion_length)"
        )
