"""What a study's stages read from the Hub, whether the local Hub cache holds it, and fetching it.

Compute nodes are often offline. Every model (with its tokenizer) and every dataset a stage
names on the Hub is listed from the stages' own configs; local folders, the embedded model,
packaged models and the study's own outputs are not the Hub's to fetch. ``rlvr.study.prefetch``
downloads what is missing into the Hub cache (``HF_HOME`` / ``HF_HUB_CACHE``) on a machine
with network; the stages then run with ``HF_HUB_OFFLINE=1``, and every dry run lists what the
cache lacks.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from rlvr.config import RunConfig

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# what a model needs offline: weights, config, tokenizer and chat template (no .bin/.pth twins)
MODEL_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja", "*.py"]
PREFETCH = "python -m rlvr.study.prefetch"


@dataclass(frozen=True, order=True)
class HubItem:
    """One Hub repository a stage reads: a model (and its tokenizer) or a dataset."""

    kind: str  # model | dataset
    repo_id: str
    revision: str | None = None
    # how stages load a dataset: task names (their loaders prepare the datasets cache), or
    # "sft" (load_dataset(repo, split="train"), as the SFT stage reads it)
    uses: tuple[str, ...] = field(default=(), compare=False)

    @property
    def repo_type(self) -> str:
        return "model" if self.kind == "model" else "dataset"

    def __str__(self) -> str:
        at = f"@{self.revision}" if self.revision else ""
        return f"{self.kind} {self.repo_id}{at}"


def on_hub(name: str | None) -> bool:
    """Whether ``name`` is a Hub id rather than a local folder (existing or still to be
    written by a stage), the embedded model or a packaged one."""
    from rlvr.models.packaged import is_packaged

    if not name or name == "tiny" or is_packaged(name):
        return False
    if name.startswith((".", "/", "~")) or Path(name).expanduser().exists():
        return False
    return bool(HUB_ID.match(name))


TRAINING = ("sft", "expert", "mixed", "cascade", "adaptive", "rl", "distill")


def _model_names(kind: str, run: RunConfig) -> list[str]:
    if kind == "eval":
        return [m.split("=", 1)[-1] for m in run.eval.models]
    if kind not in TRAINING:
        return []  # merges and reports read the study's own folders
    names = [run.init_from or run.model.name]
    if kind == "distill":
        names += list(run.distill.teachers.values())
    return names


def _task_datasets(run: RunConfig, tasks: Iterable[str], with_files: set[str]) -> list[HubItem]:
    from tasks.registry import UnknownTaskError, get_task, local_tasks

    local = set(local_tasks(run.paths.data_dir))
    items = []
    for task in tasks:
        if task in with_files or task in local:
            continue
        try:
            spec = get_task(task)
        except UnknownTaskError:
            continue  # an unknown task fails the stage's own checks, not this listing
        if spec.hub_id and spec.read is None:
            items.append(HubItem("dataset", spec.hub_id, spec.hub_revision, (task,)))
    return items


def _dataset_items(kind: str, run: RunConfig) -> list[HubItem]:
    from rlvr.config.domain_files import files_by_task

    if kind == "sft":
        return [HubItem("dataset", d, uses=("sft",)) for d in run.sft.datasets if on_hub(d)]
    if kind == "eval":
        tasks = list(run.eval.tasks) or [t for d in run.domains.values() for t in d.eval_tasks]
        return _task_datasets(run, tasks, set())
    if kind not in TRAINING:
        return []
    with_files = {t for name, dc in run.domains.items() for t in files_by_task(name, dc)}
    tasks = [t for dc in run.domains.values() for t in dc.train_tasks]
    return _task_datasets(run, tasks, with_files)


def hub_items(stages: Iterable[tuple[str, RunConfig]]) -> list[HubItem]:
    """Every Hub model and dataset the stages (kind, config) read, once each, sorted."""
    found: dict[HubItem, HubItem] = {}
    for kind, run in stages:
        named = [HubItem("model", n) for n in _model_names(kind, run) if on_hub(n)]
        for item in [*named, *_dataset_items(kind, run)]:
            seen = found.get(item, item)
            found[item] = replace(seen, uses=tuple(sorted({*seen.uses, *item.uses})))
    return sorted(found.values())


def cached_repos(cache_dir: str | Path | None = None) -> set[tuple[str, str]]:
    """(repo type, repo id) of every repository with a snapshot in the Hub cache."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir(cache_dir)
    except CacheNotFound:
        return set()
    return {(r.repo_type, r.repo_id) for r in info.repos if r.revisions}


def missing(items: Iterable[HubItem], cache_dir: str | Path | None = None) -> list[HubItem]:
    """The items the local Hub cache has no snapshot of."""
    items = list(items)
    if not items:
        return []  # the embedded study names nothing on the Hub: no cache to scan
    have = cached_repos(cache_dir)
    return [i for i in items if (i.repo_type, i.repo_id) not in have]


def fetch(items: Iterable[HubItem], cache_dir: str | Path | None = None) -> list[str]:
    """Download ``items`` into the Hub cache; the ones that could not be fetched, with why."""
    from huggingface_hub import snapshot_download

    failed = []
    for item in items:
        patterns = MODEL_FILES if item.kind == "model" else None
        try:
            snapshot_download(
                item.repo_id,
                repo_type=item.repo_type,
                revision=item.revision,
                allow_patterns=patterns,
                cache_dir=cache_dir,
            )
            for use in item.uses:  # the datasets cache the stages read offline
                _prepare(item, use)
        except Exception as err:  # noqa: BLE001 - every Hub/network failure is reported alike
            failed.append(f"{item}: {type(err).__name__}: {str(err).splitlines()[0][:160]}")
    return failed


def _prepare(item: HubItem, use: str) -> None:
    """Load a fetched dataset the way its stages do, so ``HF_DATASETS_OFFLINE=1`` finds it."""
    import datasets

    from tasks.registry import load_task_rows

    if use == "sft":
        datasets.load_dataset(item.repo_id, split="train", revision=item.revision)
    else:
        load_task_rows(use, limit=1)


def missing_lines(items: list[HubItem], argv: Iterable[str]) -> list[str]:
    """The dry run's lines about the Hub cache (empty when nothing is missing)."""
    if not items:
        return []
    # the study's own overrides, quoted for a shell, without the dry run that printed this
    kept = [shlex.quote(a) for a in argv if a.lstrip("+").split("=", 1)[0] != "study.dry_run"]
    command = " ".join([PREFETCH, *kept])
    return [
        f"hub cache: {len(items)} named on the Hub and missing from this machine's cache "
        "(compute nodes without network need them there):",
        *(f"  {item}" for item in items),
        f"  fetch them on a machine with network (same HF_HOME): {command}",
    ]


def offline_env(env: Mapping[str, str]) -> bool:
    return env.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
