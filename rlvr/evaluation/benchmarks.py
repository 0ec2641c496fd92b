"""Evaluation benchmarks by name: a shared-data task or a micro-suite held-out set (``micro_<d>``)."""

from __future__ import annotations

from typing import Any

from rlvr.config import ConfigError
from rlvr.config.benchmark_names import MICRO_PREFIX


def micro_domain(name: str) -> str | None:
    """The domain of a micro-suite held-out set's name; None for any other benchmark."""
    return name[len(MICRO_PREFIX) :] if name.startswith(MICRO_PREFIX) else None


def benchmark_domain(name: str) -> str:
    if name.startswith(MICRO_PREFIX):
        return name[len(MICRO_PREFIX) :]
    from tasks.registry import get_task

    return get_task(name).domain


def load_benchmark(name: str, limit: int | None, data_dir: str, seed: int, difficulty: Any = None) -> list[dict]:
    """Canonical rows of a shared-data benchmark or a micro-suite held-out set (``micro_<d>``).

    ``difficulty`` (micro-suite only): a level, a list of levels, or None for all levels.
    """
    if name.startswith(MICRO_PREFIX):
        from tasks import micro

        domain = name[len(MICRO_PREFIX) :]
        if domain not in micro.DOMAINS:
            raise ConfigError(
                f"eval task {name!r}: no micro-suite generator for {domain!r}; "
                f"known: {', '.join(MICRO_PREFIX + d for d in micro.DOMAINS)}"
            )
        rows = micro.generate(domain, limit or 64, seed, difficulty, split="heldout")
    else:
        from tasks.registry import load_task_rows

        rows = load_task_rows(name, limit=limit, data_dir=data_dir, seed=seed)
    return rows
