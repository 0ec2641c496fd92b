"""Training rows per domain, known before any model loads: counted, printed, and refused when none.

A study's plan counts each planned domain's rows (``count_domains``) and a training stage checks
the rows it loaded (``require_rows``), so a domain with no data stops the run at its start
instead of leaving an expert untrained or a mixed arm short of a domain. Where a domain's rows
come from decides how they are counted: generated tasks give ``mixture.train_size`` rows; local
files (``domains.<d>.data_files``, ``$RLVR_TASK_FILES``, the shared-data folder) are read through
the same loader training uses (no model); Hub data is not counted offline, except where the Hub
alone gives nothing: the Nemotron blend's math rows are ``_hf_placeholder`` rows that only local
copies fill, and its agent rows need NeMo Gym's workbench tables.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config.schemas import ConfigError, RunConfig

log = logging.getLogger(__name__)

MICRO_PREFIX = "micro_"
ROWS_PREFIX = "rows_"  # canonical rows read from domains.<d>.data_files (tasks.adapters.rows)


@dataclass(frozen=True)
class TaskRows:
    """One training task's rows: a count (None: not counted) and where they come from."""

    task: str
    rows: int | None
    where: str
    fix: str = ""  # what to supply when the task gives no rows


@dataclass(frozen=True)
class DomainRows:
    """A domain's training rows, task by task."""

    domain: str
    tasks: tuple[TaskRows, ...]

    @property
    def rows(self) -> int | None:
        counts = [t.rows for t in self.tasks]
        return None if None in counts else sum(c or 0 for c in counts)

    @property
    def empty(self) -> bool:
        """No rows, for certain (a task not counted might have some)."""
        return self.rows == 0

    @property
    def fix(self) -> str:
        fixes = [f"{t.task}: {t.fix}" for t in self.tasks if t.rows == 0 and t.fix]
        return "; ".join(fixes) or f"give domains.{self.domain}.train_tasks rows"

    def describe(self) -> str:
        rows = self.rows
        total = "?" if rows is None else f"{rows:,}"
        detail = "; ".join(f"{t.task}: {t.where}" for t in self.tasks) or "no train tasks"
        return f"{self.domain:<12} {total:>10}  {detail}" + ("  <- EMPTY" if rows == 0 else "")


def count_domains(
    run: RunConfig, pending: Sequence[Path] = (), cache: dict[tuple, TaskRows] | None = None
) -> dict[str, DomainRows]:
    """Each domain's training rows; files under ``pending`` (an earlier stage writes them) are
    not counted. ``cache`` shares counts across stage configs that read the same data."""
    cache = {} if cache is None else cache
    out = {}
    for domain, dc in run.domains.items():
        tasks = []
        for task in dc.train_tasks:
            key = _task_key(run, domain, task)
            if key not in cache:
                cache[key] = count_task(run, domain, task, pending)
            tasks.append(cache[key])
        out[domain] = DomainRows(domain, tuple(tasks))
    return out


def count_task(run: RunConfig, domain: str, task: str, pending: Sequence[Path] = ()) -> TaskRows:
    """One training task's rows, read locally where the data is local (no model loads)."""
    from rlvr.config.domain_files import files_by_task
    from tasks.registry import get_task, shared_data_dir, task_files_from_env

    size = run.mixture.train_size
    if task.startswith(MICRO_PREFIX):
        return TaskRows(task, size, "generated")
    spec = get_task(task)
    dc = run.domains[domain]
    try:
        files = files_by_task(domain, dc).get(task) or task_files_from_env(task)
    except (FileNotFoundError, ValueError) as err:  # $RLVR_TASK_FILES names a missing file
        raise ConfigError(str(err)) from None
    resolve = [p for paths in dc.resolve_files.values() for p in paths] if files else []
    missing = [f for f in (*files, *resolve) if not Path(f).expanduser().is_file()]
    if missing:
        return _missing(task, domain, missing[0], pending)
    if (hint := _workbench_missing(spec)) is not None:
        return TaskRows(task, 0, "workbench tables missing", hint)
    if files:
        return _loaded(run, domain, task, f"{len(files)} local file(s)")
    if task.startswith(ROWS_PREFIX):
        return TaskRows(task, 0, "no files", _rows_fix(domain))
    local = spec.local_file and (shared_data_dir(run.paths.data_dir) / spec.local_file).is_file()
    if local:
        return _loaded(run, domain, task, f"shared data {spec.local_file}")
    if spec.read is not None:
        return TaskRows(task, size, "generated")
    if spec.hub_id and _hub_placeholders_only(spec):
        return TaskRows(task, 0, f"on the Hub: {spec.hub_id}, placeholders only", _blend_fix(domain))
    if spec.hub_id:
        return TaskRows(task, None, f"on the Hub: {spec.hub_id}, not counted")
    return TaskRows(task, 0, "no source", f"{task} names no local file or Hub id")


def static_fix(run: RunConfig, domain: str) -> str:
    """What to supply for a domain that loaded no rows, without reading its data again."""
    from tasks.registry import get_task

    fixes = []
    files = run.domains[domain].data_files
    for task in run.domains[domain].train_tasks:
        spec = None if task.startswith(MICRO_PREFIX) else get_task(task)
        if spec is not None and (hint := _workbench_missing(spec)) is not None:
            fixes.append(f"{task}: {hint}")
        elif spec is not None and _hub_placeholders_only(spec) and not files:
            fixes.append(f"{task}: {_blend_fix(domain)}")
        elif task.startswith(ROWS_PREFIX) and not files:
            fixes.append(f"{task}: {_rows_fix(domain)}")
    return "; ".join(fixes) or (
        f"every row was dropped or filtered (the dropped-row counts are logged above): check "
        f"domains.{domain}.data_files, domains.{domain}.train_tasks and mixture.difficulty"
    )


def require_rows(run: RunConfig, train_rows: Mapping[str, Sized]) -> None:
    """A training stage's refusal to start on a selected domain that loaded no training rows."""
    empty = [d for d in run.domains if not len(train_rows.get(d, ()))]
    if empty:
        raise ConfigError(
            "no training rows for "
            + "; ".join(f"domain {d} ({static_fix(run, d)})" for d in empty)
            + ". The run stops before any model loads; supply the data or drop the domain "
            "from domains=[...]"
        )


def empty_domains_error(empty: Mapping[str, tuple[DomainRows, Sequence[str]]]) -> ConfigError:
    """The plan's error for planned domains without rows: which, in which stages, what to do."""
    parts = []
    for domain, (rows, stages) in empty.items():
        shown = ", ".join(stages[:3]) + (f" and {len(stages) - 3} more" if len(stages) > 3 else "")
        parts.append(f"domain {domain} (stages {shown}): {rows.fix}")
    return ConfigError("planned domains without training rows: " + " | ".join(parts))


def _task_key(run: RunConfig, domain: str, task: str) -> tuple[Any, ...]:
    dc = run.domains[domain]
    resolve = sorted((k, tuple(v)) for k, v in dc.resolve_files.items())
    files = repr(dc.data_files)
    return (domain, task, files, repr(resolve), run.mixture.train_size, run.paths.data_dir)


def _loaded(run: RunConfig, domain: str, task: str, where: str) -> TaskRows:
    """The rows training would load (adapters, drops and dedup included), counted."""
    from rlvr.data.rows import load_task
    from tasks.quality import QualityLog

    quality = QualityLog()
    try:
        rows = load_task(run, domain, task, split="train", n=run.mixture.train_size, quality=quality)
    except (OSError, ValueError, KeyError) as err:
        raise ConfigError(
            f"domains.{domain}: {task}'s training rows cannot be read ({type(err).__name__}: "
            f"{err}); fix domains.{domain}.data_files"
        ) from None
    if rows:
        return TaskRows(task, len(rows), where)
    reasons = [r for c in quality.sources.values() for r, _ in c.dropped.most_common(1)]
    why = f"every row was dropped ({reasons[0]})" if reasons else "the files hold no rows"
    return TaskRows(task, 0, where, f"{why}; check domains.{domain}.data_files")


def _missing(task: str, domain: str, path: str, pending: Sequence[Path]) -> TaskRows:
    file = Path(path).expanduser().resolve()
    if any(file.is_relative_to(Path(root).expanduser().resolve()) for root in pending):
        return TaskRows(task, None, f"written by an earlier stage ({file.name}), not counted")
    fix = f"{path} does not exist: fix domains.{domain}.data_files / resolve_files"
    return TaskRows(task, 0, "local file missing", fix)


def _workbench_missing(spec) -> str | None:
    """The fix when ``spec`` replays in NeMo Gym's workbench and its tables are absent."""
    from tasks.adapters import nemotron_blend
    from tasks.environments import workbench_data

    if spec.adapt is not nemotron_blend.agent:
        return None
    folder = workbench_data.database_dir()
    if not workbench_data.missing_files(folder):
        return None
    return f"every row replays in the workbench, whose tables are not at {folder}: " + (workbench_data.SOURCE_HINT)


def _hub_placeholders_only(spec) -> bool:
    """Whether every Hub row of ``spec`` is an ``_hf_placeholder`` (the blend's math slice):
    each sub-dataset it keeps is one the placeholder resolver knows."""
    from tasks.adapters import nemotron_blend
    from tasks.adapters.blend_placeholders import SOURCES

    subsets = getattr(spec.keep, "keywords", {}).get("suffixes", ())
    return (
        spec.hub_id == nemotron_blend.HUB_ID
        and bool(subsets)
        and all(nemotron_blend.PREFIX + s in SOURCES for s in subsets)
    )


def _blend_fix(domain: str) -> str:
    from tasks.adapters.blend_placeholders import SOURCES

    sources = ", ".join(f"{s.hub_id}: [<split {s.split!r}>.parquet]" for s in SOURCES.values())
    return (
        f"the Hub's rows are placeholders that only local files fill: set "
        f"domains.{domain}.data_files=[<the blend's train.jsonl>] and "
        f"'++domains.{domain}.resolve_files={{{sources}}}' (++: the key adds to an empty map), "
        f"or train on canonical rows: "
        f"domains.{domain}.train_tasks=[{ROWS_PREFIX}{domain}] "
        f"domains.{domain}.data_files=[<rows>.jsonl]"
    )


def _rows_fix(domain: str) -> str:
    return f"set domains.{domain}.data_files=[<rows>.jsonl] (canonical rows, e.g. rlvr.filter's)"
