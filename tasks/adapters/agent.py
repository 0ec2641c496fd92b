"""Agent tasks from other modules: BFCL v3 (``tasks.bfcl``) and procedural workplace episodes.

Their loaders already produce canonical rows; they are imported only when a task is loaded,
so this registry works before (and without) those modules.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.quality import require_columns
from tasks.schema import COLUMNS
from tasks.spec import LoadRequest, RowContext, TaskSpec, register_task

BFCL_MODULE = "tasks.bfcl"
BFCL_DIR = "agent/bfcl_v3"
BFCL_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
WORKPLACE_DEFAULT_N = 200


def _module(name: str, task: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise RuntimeError(f"task {task!r} needs module {name!r}, which is not available") from exc


def passthrough(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """A row another module already made canonical; normalised so it concatenates."""
    require_columns(raw, COLUMNS, ctx.spec.name)
    row = {c: raw[c] for c in COLUMNS}
    if not isinstance(row["reference"], str):
        from tasks.schema import make_row

        return make_row(**{**row, "environment": str(row["environment"] or "")})
    row["environment"] = str(row["environment"] or "")
    return row


def read_bfcl(req: LoadRequest, spec: TaskSpec, *, category: str) -> Iterable[Mapping[str, Any]]:
    bfcl = _module(BFCL_MODULE, spec.name)
    return bfcl.load_bfcl(category, req.data_dir / BFCL_DIR, req.limit)


def read_bfcl_split(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    bfcl = _module(BFCL_MODULE, spec.name)
    return bfcl.load_bfcl_split(req.split, req.data_dir / BFCL_DIR, req.limit)


def read_workplace(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    """Procedural episodes; the split names a difficulty unless it is the default "train"."""
    envs = _module("tasks.environments", spec.name)
    kwargs: dict[str, Any] = {"n": req.limit or WORKPLACE_DEFAULT_N, "seed": req.seed}
    if req.split != spec.split:
        kwargs["difficulty"] = req.split
    return envs.generate_workplace_tasks(**kwargs)


for _cat in BFCL_CATEGORIES:
    register_task(
        TaskSpec(
            name=f"bfcl_{_cat}",
            domain="agent",
            verifier="tool_calls",
            source=f"ShishirPatil/gorilla BFCL v3 {_cat}",
            adapt=passthrough,
            local_file=f"{BFCL_DIR}/BFCL_v3_{_cat}.json",
            read=functools.partial(read_bfcl, category=_cat),
            needs=BFCL_MODULE,
        )
    )

for _name, _split in (("bfcl_calls", "train"), ("bfcl_calls_heldout", "test")):
    register_task(
        TaskSpec(
            name=_name,
            domain="agent",
            verifier="tool_calls",
            source="ShishirPatil/gorilla BFCL v3 simple + multiple, split by item id",
            adapt=passthrough,
            split=_split,
            local_file=f"{BFCL_DIR}/BFCL_v3_simple.json",  # present means the split can be read
            read=read_bfcl_split,
            needs=BFCL_MODULE,
            description=(
                "BFCL v3 single-call items (simple, multiple): three quarters for training, "
                "the held-out quarter (bfcl_calls_heldout) never trained on"
            ),
        )
    )

register_task(
    TaskSpec(
        name="workplace",
        domain="agent",
        verifier="workplace",  # the environment replay verifier scores every environment
        source="procedural workplace episodes (tasks.environments)",
        adapt=passthrough,
        split="train",
        prompt_format="agent",
        read=read_workplace,
        needs="tasks.environments",
    )
)
