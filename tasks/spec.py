"""Task specifications and the store the built-in adapters register into (below the registry's
lookups, so adapters never import the module that imports them)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.schema import check_domain, make_row

SHARED_DATA_ENV = "RLVR_SHARED_DATA"
REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the shared evaluation files live: argument, ``$RLVR_SHARED_DATA``, or ../shared/data."""
    if data_dir is not None:
        return Path(data_dir)
    return Path(os.environ.get(SHARED_DATA_ENV, REPO_ROOT.parent / "shared" / "data"))


@dataclass(frozen=True)
class LoadRequest:
    """What a caller asked for; custom readers (generators, BFCL) read their knobs from here."""

    split: str
    limit: int | None
    data_dir: Path
    seed: int
    data_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowContext:
    """Handed to an adapter with each source row: which task, which source label, which index."""

    spec: TaskSpec
    source: str  # "<task>/<split>"
    index: int  # position in the source, the fallback native id

    def row(
        self,
        prompt: Sequence[Mapping[str, str]],
        reference: Mapping[str, Any],
        native_id: Any = None,
        environment: str = "",
    ) -> dict[str, Any]:
        """A canonical row with this task's domain and verifier and id ``<source>:<native id>``."""
        native = self.index if native_id is None or native_id == "" else native_id
        return make_row(
            prompt=prompt,
            domain=self.spec.domain,
            verifier=self.spec.verifier,
            reference=reference,
            source=self.source,
            id=f"{self.source}:{native}",
            environment=environment,
        )


Adapter = Callable[[Mapping[str, Any], RowContext], dict[str, Any]]
Reader = Callable[[LoadRequest, "TaskSpec"], Iterable[Mapping[str, Any]]]


@dataclass(frozen=True)
class TaskSpec:
    """One task: where its rows come from, how they look to the model, and who scores them."""

    name: str
    domain: str
    verifier: str  # verifier registry name
    source: str  # Hub id or shared-data path, for people and error messages
    adapt: Adapter  # source row -> canonical row (raise SkipRow to drop a row)
    split: str = "test"
    prompt_format: str = "as_is"  # key of tasks.prompts.FORMATS
    local_file: str | None = None  # relative to the shared data folder; read offline
    hub_id: str | None = None  # datasets.load_dataset name, used only when asked
    hub_config: str | None = None
    hub_revision: str | None = None  # Hub commit the task reads (None: the default branch)
    hub_read: Reader | None = None  # custom Hub loader (several configs, raw files)
    required_columns: tuple[str, ...] = ()
    keep: Callable[[Mapping[str, Any], str], bool] | None = None  # (row, split) -> keep?
    read: Reader | None = None  # custom source (generators, other modules' loaders)
    needs: str | None = None  # module the reader imports; the task is unavailable without it
    description: str = ""


class UnknownTaskError(KeyError):
    """Raised for a task name nobody registered; the message lists the known names."""

    def __str__(self) -> str:
        return str(self.args[0])


_TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    check_domain(spec.domain)
    if spec.name in _TASKS and _TASKS[spec.name] != spec:
        raise ValueError(f"task {spec.name!r} is already registered")
    _TASKS[spec.name] = spec
    return spec
