"""Who a stage's W&B run is: one run per stage for life, named and grouped as a user reads them.

The run id is derived from where the stage lives (the study folder and the stage's name, or,
outside a study, the run folder), so a requeued, resumed or relaunched stage finds its own run
again; the group is the study folder (two folders of one experiment never mix), or a Hydra
sweep's folder, or the experiment outside both.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig

MANIFEST = "study.json"  # the study folder's record (rlvr.study.manifest)


@dataclass(frozen=True)
class SweepPoint:
    """A point of a Hydra multirun: the sweep's folder, and the overrides the sweep varies as
    this point set them (``trainer.seed=1``; empty where unknown)."""

    folder: Path
    swept: str = ""


@dataclass(frozen=True)
class RunIdentity:
    id: str
    name: str
    group: str
    job_type: str
    tags: tuple[str, ...]


def identity(run: RunConfig, run_dir: Path, verb: str, sweep: SweepPoint | None = None) -> RunIdentity:
    """The W&B identity of the stage ``run`` runs in ``run_dir`` (``verb``: rl, sft, distill,
    evaluate, ...); ``sweep``: the Hydra multirun point this run is, if any."""
    tags = _tags(run)
    study = study_folder(run, run_dir)
    stage = _stage_record(study, run.run_name) if study else None
    if study is not None and stage is not None:
        return RunIdentity(
            id=_digest(str(study), run.run_name),
            name=run.run_name,
            group=folder_group(study),
            job_type=str(stage.get("kind", verb)),
            tags=tags,
        )
    folder = Path(run_dir).resolve()
    if sweep is not None:
        name = sweep.swept or folder.name
        return RunIdentity(_digest(str(folder)), name, folder_group(sweep.folder), verb, tags)
    return RunIdentity(_digest(str(folder)), folder.name, run.experiment, verb, tags)


def study_folder(run: RunConfig, run_dir: Path) -> Path | None:
    """The study folder a stage belongs to: the nearest folder holding ``study.json`` above the
    run folder, or the evaluation's or report's output folder where that is one."""
    candidates = [Path(run_dir).resolve(), *Path(run_dir).resolve().parents]
    candidates += [Path(p).expanduser().resolve() for p in (run.eval.out_dir, run.report.study_dir) if p]
    return next((c for c in candidates if (c / MANIFEST).is_file()), None)


def folder_group(folder: Path) -> str:
    """A folder's name with a short digest of its absolute path: readable, and unique."""
    folder = Path(folder).resolve()
    return f"{folder.name}-{_digest(str(folder))[:6]}"


def _stage_record(study: Path, name: str) -> dict[str, Any] | None:
    try:
        stages = json.loads((study / MANIFEST).read_text()).get("stages", {})
    except (OSError, ValueError):  # a manifest being rewritten, or foreign: not a study stage
        return None
    return stages.get(name) if isinstance(stages, dict) else None


def _tags(run: RunConfig) -> tuple[str, ...]:
    domains = sorted(run.domains)
    arm = "mixed" if len(domains) > 1 else (domains[0] if domains else "")
    return tuple(t for t in (*domains, f"arm:{arm}" if arm else "", f"seed:{run.trainer.seed}") if t)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
