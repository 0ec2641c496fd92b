"""The launcher a study names (``study.launcher``): local processes, or submitit's executors."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr.study.launchers import Launcher, SubmititLauncher
from rlvr.study.local_launcher import LocalLauncher
from rlvr.study.manifest import LOGS
from rlvr.study.warm_start import WarmStart


def make_launcher(
    kind: str,
    root: Path,
    jobs: int,
    params: Mapping[str, Any],
    by_kind: Mapping[str, Mapping[str, Any]] | None = None,
    warm_start: bool = False,
) -> Launcher:
    if kind == "local":
        warm = WarmStart(str(root / LOGS)) if warm_start else None
        return LocalLauncher(jobs, warm)
    cluster = "local" if kind == "submitit_local" else "slurm"
    return SubmititLauncher(root, cluster, jobs, params, by_kind)
