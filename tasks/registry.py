"""Task registry: name -> TaskSpec, and loading a task's source into canonical rows."""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.files import TASK_FILES_ENV, parse_task_files, read_files, read_json_records
from tasks.quality import QualityLog, SkipRow, dedup, reference_parses, require_columns
from tasks.schema import COLUMNS, RowError
from tasks.spec import (  # noqa: F401  re-exported: callers look tasks up here
    _TASKS,
    REPO_ROOT,
    SHARED_DATA_ENV,
    LoadRequest,
    RowContext,
    TaskSpec,
    UnknownTaskError,
    register_task,
    shared_data_dir,
)

log = logging.getLogger(__name__)


def _builtins() -> dict[str, TaskSpec]:
    # the built-in tasks register on first lookup: importing them costs ~0.7 s that most callers
    # of this module (data paths, row loading of a named spec) never need
    import tasks.adapters  # noqa: F401

    return _TASKS


def get_task(name: str) -> TaskSpec:
    tasks = _builtins()
    if name not in tasks:
        raise UnknownTaskError(f"unknown task {name!r}; known tasks: {', '.join(sorted(tasks))}")
    return tasks[name]


def known_tasks(domain: str | None = None) -> list[str]:
    return sorted(n for n, s in _builtins().items() if domain is None or s.domain == domain)


def local_tasks(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Tasks whose source file is present in the shared data folder."""
    root = shared_data_dir(data_dir)
    return [n for n in known_tasks() if (f := _TASKS[n].local_file) and (root / f).is_file() and _available(_TASKS[n])]


def _available(spec: TaskSpec) -> bool:
    return spec.needs is None or importlib.util.find_spec(spec.needs) is not None


def _read_hub(spec: TaskSpec, req: LoadRequest) -> Iterable[Mapping[str, Any]]:
    import datasets

    at = f" at revision {spec.hub_revision}" if spec.hub_revision else ""
    try:
        if spec.hub_read is not None:
            return spec.hub_read(req, spec)
        return datasets.load_dataset(spec.hub_id, spec.hub_config, split=req.split, revision=spec.hub_revision)
    except Exception as exc:
        raise RuntimeError(
            f"task {spec.name!r}: could not load {spec.hub_id!r} split {req.split!r}{at} from "
            f"the Hub ({type(exc).__name__}: {exc}); read a local copy instead: "
            f"{TASK_FILES_ENV}='{spec.name}=<file>' or data_files=[...]"
        ) from exc


def task_files_from_env(name: str) -> tuple[str, ...]:
    """The local copies ``$RLVR_TASK_FILES`` names for task ``name`` (none: empty).

    An unknown task name or a missing file fails here, before anything loads.
    """
    found = parse_task_files()
    for task in found:
        get_task(task)
    for path in found.get(name, ()):
        if not Path(path).is_file():
            raise FileNotFoundError(f"{TASK_FILES_ENV}: {name}'s local copy {path} not found")
    return found.get(name, ())


def read_source(spec: TaskSpec, req: LoadRequest) -> Iterable[Mapping[str, Any]]:
    """Raw source rows: custom reader, local copies, shared-data file, then the Hub."""
    if spec.read is not None:
        return spec.read(req, spec)
    if req.data_files:
        return read_files(req.data_files)
    if spec.local_file:
        path = req.data_dir / spec.local_file
        if path.is_file():
            return read_json_records(path)
        if not spec.hub_id:
            raise FileNotFoundError(
                f"task {spec.name!r}: {path} not found; set {SHARED_DATA_ENV} to the shared "
                "data folder or pass data_dir="
            )
    if spec.hub_id:
        return _read_hub(spec, req)
    raise ValueError(f"task {spec.name!r} names no local file, Hub id or reader")


def load_task_rows(
    name: str,
    *,
    split: str | None = None,
    limit: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    data_files: str | Sequence[str] | None = None,
    quality: QualityLog | None = None,
) -> list[dict[str, Any]]:
    """Canonical rows of one task, in source order, deduplicated; at most ``limit`` rows.

    ``seed`` reaches custom readers (procedural generators); file sources keep their order,
    shuffling is the mixture's job. Drops and duplicates are counted in ``quality``.
    Local copies: ``data_files``, else the ones ``$RLVR_TASK_FILES`` names for this task.
    """
    spec = get_task(name)
    files = (data_files,) if isinstance(data_files, str) else tuple(data_files or ())
    files = files or task_files_from_env(spec.name)
    req = LoadRequest(split or spec.split, limit, shared_data_dir(data_dir), seed, files)
    source = f"{spec.name}/{req.split}"
    own_log = quality is None
    quality = QualityLog() if quality is None else quality
    counts = quality.counts(source)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(read_source(spec, req)):
        if spec.keep is not None and not spec.keep(raw, req.split):
            continue
        counts.read += 1
        require_columns(raw, spec.required_columns, f"{spec.name} ({spec.source})")
        try:
            row = spec.adapt(raw, RowContext(spec, source, index))
        except (SkipRow, RowError) as exc:
            quality.drop(source, str(exc) or type(exc).__name__)
            continue
        if not reference_parses(row):
            quality.drop(source, "reference is not a JSON object")
            continue
        rows.extend(dedup([row], quality, seen, source))
        if limit is not None and len(rows) >= limit:
            break
    counts.kept += len(rows)
    if own_log:
        quality.summary()
    return rows


def load_tasks(
    names: Iterable[str],
    *,
    limit_per_task: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    quality: QualityLog | None = None,
) -> list[dict[str, Any]]:
    """Rows of several tasks, concatenated and deduplicated across tasks by prompt."""
    quality = QualityLog() if quality is None else quality
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for name in names:
        loaded = load_task_rows(name, limit=limit_per_task, data_dir=data_dir, seed=seed, quality=quality)
        label = f"{name}/{get_task(name).split}"
        kept = dedup(loaded, quality, seen, label)
        quality.counts(label).kept -= len(loaded) - len(kept)
        rows.extend(kept)
    quality.summary()
    return rows


def features():
    """The ``datasets.Features`` every task's rows share, so domains concatenate."""
    from datasets import Features, Value

    message = {"role": Value("string"), "content": Value("string")}
    cols = {c: Value("string") for c in COLUMNS if c != "prompt"}
    return Features({"prompt": [message], **cols})


def to_dataset(rows: Sequence[Mapping[str, Any]]):
    """A ``datasets.Dataset`` with the canonical features (columns in schema order)."""
    from datasets import Dataset

    return Dataset.from_list([{c: r[c] for c in COLUMNS} for r in rows], features=features())
