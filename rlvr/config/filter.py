"""The schema of ``python -m rlvr.filter``: samples per row and the pass-rate band of the rows kept.

``RunConfig.filter`` (``conf/filter/default.yaml``), so filter settings live in experiment files
and on a study's command line like every other group; ``rlvr.config.checks.check_filter``
validates them with the rest of the config.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    out_dir: str | None = None  # None: <paths.output_root>/<experiment>/filter/<run_name>
