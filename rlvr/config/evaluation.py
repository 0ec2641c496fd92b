"""The evaluation settings' own rules: each benchmark's samples per prompt (``eval.k_by_task``)."""

from __future__ import annotations

from rlvr.config.benchmark_names import known_benchmarks
from rlvr.config.schemas import ConfigError, EvalConfig


def task_k(e: EvalConfig, task: str) -> int:
    """Samples per prompt for ``task``: its ``eval.k_by_task`` entry, else ``eval.k``."""
    return int(e.k_by_task.get(task, e.k))


def check_k_by_task(e: EvalConfig) -> None:
    """Every ``eval.k_by_task`` key names a benchmark, every K is a positive count.

    A key is accepted when it is one of ``eval.tasks`` or a benchmark rlvr knows (a registered
    task or a micro-suite set): a study narrows ``eval.tasks`` per evaluation stage and keeps
    the whole map, so keys outside the stage's tasks are unused, not wrong.
    """
    if bad := {t: k for t, k in e.k_by_task.items() if not isinstance(k, int) or k < 1}:
        raise ConfigError(f"eval.k_by_task: {bad}: K is the number of samples per prompt, an integer >= 1")
    unknown = [t for t in e.k_by_task if t not in e.tasks]
    if unknown and (bad_names := [t for t in unknown if t not in known_benchmarks()]):
        raise ConfigError(
            f"eval.k_by_task names unknown benchmark(s) {bad_names}: each key must be a "
            f"benchmark of eval.tasks ({', '.join(e.tasks) or 'none set'}) or a registered "
            "task; correct the name or drop the entry (tasks it does not name use eval.k)"
        )
