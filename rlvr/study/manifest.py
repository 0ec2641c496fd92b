"""The study folder's record: ``study.json`` (every stage) and per-stage done markers.

A stage is done when its marker exists with the stage's current config hash; the marker is
written last, atomically, after the stage's outputs were checked. ``study.json`` is the
readable record a person (or the next run) opens: command, hash, status, times, files.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError
from rlvr.study.plan import Stage

MANIFEST = "study.json"
MARKERS = ".stages"
LOGS = "logs"
FACTS = ("start", "end", "wall_s", "cpu_s", "device_s", "returncode", "job_id", "slurm_state")


def marker_path(root: Path, name: str) -> Path:
    return root / MARKERS / f"{name}.done.json"


def log_path(root: Path, name: str) -> Path:
    return root / LOGS / f"{name}.log"


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str))
    tmp.replace(path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def missing_outputs(stage: Stage) -> list[Path]:
    return [p for p in stage.outputs if not p.is_file()]


def mark_done(root: Path, stage: Stage, config_hash: str, facts: Mapping[str, Any]) -> None:
    """Check the stage's outputs, then write its marker (the last thing a stage writes)."""
    if missing := missing_outputs(stage):
        raise RuntimeError(
            f"stage {stage.name} exited 0 but its outputs are incomplete: {', '.join(str(p) for p in missing)}"
        )
    write_json(marker_path(root, stage.name), {"hash": config_hash, **facts})


def mark_started(root: Path, stage: Stage, config_hash: str, settings: Mapping[str, str] | None = None) -> None:
    """Which config the stage's (possibly partial) outputs come from: a resume must match it.
    ``settings`` (dotted key -> value) let a later run say what changed when it does not."""
    record: dict[str, Any] = {"hash": config_hash}
    if settings:
        record["settings"] = dict(settings)
    write_json(root / MARKERS / f"{stage.name}.started.json", record)


def changed_settings(root: Path, stage: Stage, settings: Mapping[str, str] | None, limit: int = 4) -> str:
    """``a.b: 1 -> 2, c (new)``: how the stage's settings differ from those it ran with
    (empty when the folder does not record them: stages run before they were recorded)."""
    before = (read_json(root / MARKERS / f"{stage.name}.started.json") or {}).get("settings")
    if not isinstance(before, dict) or not settings:
        return ""
    words = []
    for key in sorted(set(before) | set(settings)):
        old, new = before.get(key), settings.get(key)
        if old == new:
            continue
        if old is None:
            words.append(f"{key} (new) = {new}")
        elif new is None:
            words.append(f"{key} (gone, was {old})")
        else:
            words.append(f"{key}: {old} -> {new}")
    more = f", and {len(words) - limit} more" if len(words) > limit else ""
    return ", ".join(words[:limit]) + more


def started_hash(root: Path, stage: Stage) -> str | None:
    return (read_json(root / MARKERS / f"{stage.name}.started.json") or {}).get("hash")


def done_hash(root: Path, stage: Stage) -> str | None:
    """The hash a finished stage ran with, or None when it has not finished (or lost outputs)."""
    marker = read_json(marker_path(root, stage.name))
    if not marker or missing_outputs(stage):
        return None
    return marker.get("hash")


def invalidate(root: Path, stage: Stage) -> None:
    """Forget a stage: its marker and its outputs (a rerun must not resume stale work)."""
    marker_path(root, stage.name).unlink(missing_ok=True)
    (root / MARKERS / f"{stage.name}.started.json").unlink(missing_ok=True)
    if stage.out_dir.is_dir() and root in stage.out_dir.parents:
        shutil.rmtree(stage.out_dir)


def recorded_root(root: Path) -> Path | None:
    """Where the folder's last run had it (its logs' parent in ``study.json``): a folder moved
    since then names its old place here."""
    entries = (read_json(root / MANIFEST) or {}).get("stages", {})
    logs = [e.get("log") for e in entries.values() if isinstance(e, dict) and e.get("log")]
    return Path(logs[0]).parents[1] if logs else None


def adopt_earlier_hashes(
    root: Path, stages: Sequence[Stage], hashes: Mapping[str, str], earlier: Mapping[str, str]
) -> list[str]:
    """Rewrite the markers and record of stages that ran under the earlier hashing (absolute
    paths, before a folder could move) to their current hash, so they are reused, not rerun.
    The earlier hash is recomputed from this plan, so only unchanged stages match it."""
    adopted = []
    manifest = read_json(root / MANIFEST)
    for stage in stages:
        old, new = earlier[stage.name], hashes[stage.name]
        if old == new:
            continue
        for path in (marker_path(root, stage.name), root / MARKERS / f"{stage.name}.started.json"):
            record = read_json(path)
            if record and record.get("hash") == old:
                write_json(path, {**record, "hash": new})
                adopted.append(stage.name)
        entry = (manifest or {}).get("stages", {}).get(stage.name)
        if isinstance(entry, dict) and entry.get("config_hash") == old:
            entry["config_hash"] = new
    if manifest and adopted:
        write_json(root / MANIFEST, manifest)
    return sorted(set(adopted))


@dataclass(frozen=True)
class Reconciled:
    """What to do with each stage given what the folder already holds."""

    reuse: tuple[str, ...]  # done with the same config: skipped
    stale: dict[str, str]  # name -> why it reruns (its config, or a dependency's, changed)


def reconcile(
    root: Path,
    stages: Sequence[Stage],
    hashes: Mapping[str, str],
    force: bool,
    settings: Mapping[str, Mapping[str, str]] | None = None,
    read_only: bool = False,
    earlier: Mapping[str, str] | None = None,
) -> Reconciled:
    """Compare the folder with the plan; refuse a folder made by a different plan unless forced.

    A different plan: the folder holds finished stages this plan does not have. Stages whose
    config changed are invalidated together with their dependents (their hashes include the
    dependency's), never silently reused; the reason names the settings that changed where the
    folder recorded them. ``read_only``: a dry run's preview, the folder left as it is
    (``earlier``: hashes ``adopt_earlier_hashes`` would adopt, counted as reused).
    """
    planned = {s.name for s in stages}
    foreign = sorted(
        p.name.removesuffix(".done.json")
        for p in (root / MARKERS).glob("*.done.json")
        if p.name.removesuffix(".done.json") not in planned
    )
    if foreign and not force:
        previous = read_json(root / MANIFEST) or {}
        raise ConfigError(
            f"{root} holds outputs of a different study plan.\n"
            f"  finished there, not in this plan: {', '.join(foreign)}\n"
            f"  planned here, not there: {', '.join(sorted(planned - set(previous.get('stages', {})))) or '-'}\n"
            "Use another study.out_dir (or experiment), or pass study.force=true to run this "
            "plan there (the other stages' outputs stay on disk, unused)."
        )
    for name in [] if read_only else foreign:
        marker_path(root, name).unlink(missing_ok=True)
    reuse, stale = [], {}
    for stage in stages:
        had = done_hash(root, stage)
        if had == hashes[stage.name] or (had and had == (earlier or {}).get(stage.name)):
            reuse.append(stage.name)
        elif had is not None or started_hash(root, stage) not in (
            None,
            hashes[stage.name],
            (earlier or {}).get(stage.name),
        ):
            changed = [d for d in stage.deps if d in stale]
            what = changed_settings(root, stage, (settings or {}).get(stage.name))
            stale[stage.name] = (
                f"dependency {', '.join(changed)} changed"
                if changed
                else f"its config changed ({what})"
                if what
                else "its config changed"
            )
    return Reconciled(tuple(reuse), stale)


class Manifest:
    """``study.json``: the plan and every stage's state, rewritten atomically on each change."""

    def __init__(self, root: Path, plan: Mapping[str, Any], entries: dict[str, dict]) -> None:
        self.root = root
        self.plan = dict(plan)
        self.entries = entries

    @classmethod
    def create(
        cls,
        root: Path,
        plan: Mapping[str, Any],
        stages: Sequence[Stage],
        hashes: Mapping[str, str],
        commands: Mapping[str, list[str]],
    ) -> Manifest:
        previous = (read_json(root / MANIFEST) or {}).get("stages", {})
        entries = {}
        for s in stages:
            old = previous.get(s.name, {})
            same = old.get("config_hash") == hashes[s.name]  # a reused stage keeps its facts
            entries[s.name] = {
                "kind": s.kind,
                "command": commands[s.name],
                "deps": list(s.deps),
                "config_hash": hashes[s.name],
                "status": "pending",
                **{k: old.get(k) if same else None for k in FACTS},
                "out_dir": str(s.out_dir),
                "log": str(log_path(root, s.name)),
            }
        return cls(root, plan, entries)

    def update(self, name: str, **fields: Any) -> None:
        self.entries[name].update(fields)
        self.save()

    def save(self) -> None:
        payload = {"plan": self.plan, "updated": time.time(), "stages": self.entries}
        write_json(self.root / MANIFEST, payload)
