"""Benchmark names: what ``eval.tasks``, ``eval.k_by_task`` and ``study.benchmarks`` may name (a
registered task, or a micro-suite held-out set ``micro_<domain>``), checked in one place."""

from __future__ import annotations

from collections.abc import Iterable

from rlvr.config.schemas import ConfigError

MICRO_PREFIX = "micro_"


def known_benchmarks() -> set[str]:
    from tasks import micro
    from tasks.registry import known_tasks  # fills the task registry: ~0.7 s, on first check only

    return set(known_tasks()) | {MICRO_PREFIX + d for d in micro.DOMAINS}


def check_benchmark_names(names: Iterable[str], key: str) -> None:
    """Raise, naming ``key`` and the valid names, where one of ``names`` is no benchmark."""
    valid = known_benchmarks()
    if bad := [b for b in names if b not in valid]:
        raise ConfigError(f"{key}: unknown benchmarks {bad}; valid: {', '.join(sorted(valid))}")
