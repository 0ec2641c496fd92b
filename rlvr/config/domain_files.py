"""Local data files of a domain (``domains.<d>.data_files`` / ``resolve_files``): read and checked.

``data_files`` is ``{task: [path, ...]}`` or, for a domain with one train task, a plain list;
``files_by_task`` turns either form into the mapping the loaders use. ``check_domain_files``
fails before any model loads on a task the domain does not have, a list where the task is
ambiguous, a missing file, or placeholder sources without the blend they resolve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr.config.schemas import ConfigError, DomainConfig, RunConfig

FORMATS = (".jsonl", ".json", ".gz", ".parquet")


def _paths(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{key} must be a path or a list of paths, got {value!r}")


def files_by_task(name: str, dc: DomainConfig) -> dict[str, tuple[str, ...]]:
    """``{task: paths}`` from either form of ``domains.<name>.data_files``."""
    value, key = dc.data_files, f"domains.{name}.data_files"
    if value is None or value == {} or value == []:
        return {}
    if isinstance(value, Mapping):
        return {str(task): _paths(files, f"{key}.{task}") for task, files in value.items()}
    if len(dc.train_tasks) != 1:
        raise ConfigError(
            f"{key} is a list but domain {name!r} has {len(dc.train_tasks)} train tasks "
            f"({', '.join(dc.train_tasks) or 'none'}); name the task: "
            f"{key}={{<task>: [<path>, ...]}}"
        )
    return {dc.train_tasks[0]: _paths(value, key)}


def _check_file(path: str, key: str, task: str, check_paths: bool = True) -> None:
    file = Path(path).expanduser()
    if check_paths and not file.is_file():
        raise ConfigError(
            f"{key}: {path!r} does not exist (resolved: {file.resolve()}); download a local "
            f"copy of {task}'s source (JSONL or Parquet) there, fix the path, or drop the "
            "override to read the Hub"
        )
    if not any(file.name.endswith(s) for s in FORMATS):
        raise ConfigError(f"{key}: {path!r} is not JSONL, JSON or Parquet ({', '.join(FORMATS)})")


def check_domain_files(run: RunConfig, check_paths: bool = True) -> None:
    """Fail fast on ``data_files``/``resolve_files`` that cannot work; the message names the fix.

    ``check_paths=False`` (a study's plan, where an earlier stage writes the files) checks the
    keys and formats but not that the files exist yet.
    """
    for name, dc in run.domains.items():
        files = files_by_task(name, dc)
        tasks = [*dc.train_tasks, *dc.eval_tasks]
        for task, paths in files.items():
            key = f"domains.{name}.data_files.{task}"
            if task not in tasks:
                raise ConfigError(f"{key}: {task!r} is not a task of domain {name!r}; its tasks: {', '.join(tasks)}")
            if not paths:
                raise ConfigError(f"{key} is empty; give at least one file or drop the key")
            for path in paths:
                _check_file(path, key, task, check_paths)
        if not dc.resolve_files:
            continue
        from tasks.adapters.blend_placeholders import HUB_IDS  # only here: it loads the verifiers

        if not files:
            raise ConfigError(
                f"domains.{name}.resolve_files needs the blend it resolves as local files: set "
                f"domains.{name}.data_files too (placeholders are filled in a local copy)"
            )
        for hub_id, paths in dc.resolve_files.items():
            key = f"domains.{name}.resolve_files.{hub_id}"
            if hub_id not in HUB_IDS:
                raise ConfigError(f"{key}: unknown placeholder source; known: {', '.join(HUB_IDS)}")
            for path in _paths(paths, key):
                _check_file(path, key, hub_id, check_paths)
