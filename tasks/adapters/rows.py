"""Rows made elsewhere as tasks: canonical rows from local files, and micro-suite rows for the judge.

``rows_<domain>``: canonical rows (``tasks.schema``) read from ``domains.<d>.data_files``, each
keeping its own verifier, reference, source and id; for instance ``python -m rlvr.filter``'s
filtered sets: ``domains.math.train_tasks=[rows_math] 'domains.math.data_files=[<f>.jsonl]'``.
A row of another domain is dropped and counted.

``judged_micro_<domain>``: the micro-suite's rows of a text domain, scored by the ``judge``
verifier: the reference becomes ``{"question", "answer"}`` (the user turn, and the generator's
gold answer where it has one). These read every difficulty level (``mixture.difficulty`` applies
to ``micro_*`` tasks only) and one split, so use them as training tasks beside a ``micro_*``
evaluation task, which keeps its programmatic verifier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.quality import SkipRow, require_columns
from tasks.schema import COLUMNS, DOMAINS, make_row, reference_of
from tasks.spec import LoadRequest, RowContext, TaskSpec, register_task

JUDGED_DOMAINS = ("math", "code", "science", "instruction")  # the micro-suite's text domains
JUDGED_DEFAULT_N = 200


def read_files(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    if not req.data_files:
        raise FileNotFoundError(
            f"task {spec.name!r} reads canonical rows from local files: set "
            f"domains.{spec.domain}.data_files=[<rows>.jsonl] (e.g. rlvr.filter's output)"
        )
    from tasks.files import read_files

    return read_files(req.data_files)


def canonical(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """A canonical row as written, checked column by column; rows of another domain drop."""
    require_columns(raw, COLUMNS, ctx.spec.name)
    if raw["domain"] != ctx.spec.domain:
        raise SkipRow(f"row of domain {raw['domain']!r} in a {ctx.spec.domain} task")
    row = {c: raw[c] for c in COLUMNS}
    reference = reference_of(row)
    return make_row(**{**row, "reference": reference, "environment": str(row["environment"] or "")})


def read_micro(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    from tasks import micro

    domain = spec.name.removeprefix("judged_micro_")
    return micro.generate(domain, req.limit or JUDGED_DEFAULT_N, req.seed, None, req.split)


def judged(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """A micro-suite row with the judge's reference: the question and the gold answer."""
    question = "\n".join(m["content"] for m in raw["prompt"] if m["role"] == "user")
    gold = reference_of(raw).get("answer")
    reference = {"question": question, "answer": "" if gold is None else str(gold)}
    return ctx.row(raw["prompt"], reference, native_id=raw["id"])


for _domain in DOMAINS:
    register_task(
        TaskSpec(
            name=f"rows_{_domain}",
            domain=_domain,
            verifier="(each row's own)",
            source="canonical rows from domains.<d>.data_files",
            adapt=canonical,
            split="train",
            read=read_files,
            description="canonical rows from local files (e.g. rlvr.filter's output)",
        )
    )

for _domain in JUDGED_DOMAINS:
    register_task(
        TaskSpec(
            name=f"judged_micro_{_domain}",
            domain=_domain,
            verifier="judge",
            source=f"micro-suite {_domain} generator, judged",
            adapt=judged,
            split="train",
            read=read_micro,
            description="micro-suite rows scored by the LLM judge (verifier_options.judge)",
        )
    )
