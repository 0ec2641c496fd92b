"""The study's training rows per planned domain: printed by every plan, fatal when a domain has none.

Runs before anything launches (dry run or not): each GRPO and distillation stage's own config
is counted (``rlvr.data.row_counts``), so an arm's overrides of a domain's data count too; data
an earlier stage of the study writes is named, not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from rlvr.config import RunConfig
from rlvr.data.row_counts import DomainRows, TaskRows, count_domains, empty_domains_error
from rlvr.study.commands import stage_config, user_overrides
from rlvr.study.plan import Stage, study_root

TRAINING_ENTRIES = ("rlvr.train", "rlvr.distill")  # the stages that train on domain rows


def check_training_rows(
    run: RunConfig, argv: Sequence[str], stages: Sequence[Stage], out: TextIO
) -> dict[str, list[tuple[DomainRows, list[str]]]]:
    """Write the rows of every planned domain to ``out``; raise ``ConfigError`` on an empty one.

    Returns, per domain, each distinct count with the stages that see it."""
    base = user_overrides(list(argv))
    pending = [study_root(run)]
    cache: dict[tuple, TaskRows] = {}
    seen: dict[str, list[tuple[DomainRows, list[str]]]] = {}
    for stage in (s for s in stages if s.entry in TRAINING_ENTRIES):
        counts = count_domains(stage_config(base, stage), pending, cache)
        for domain, rows in counts.items():
            variants = seen.setdefault(domain, [])
            match = next((names for r, names in variants if r == rows), None)
            if match is None:
                variants.append((rows, [stage.name]))
            else:
                match.append(stage.name)
    if seen:
        out.write(format_rows(seen) + "\n")
    empty = {}
    for domain, variants in seen.items():
        if bad := [(rows, names) for rows, names in variants if rows.empty]:
            empty[domain] = (bad[0][0], [name for _, names in bad for name in names])
    if empty:
        raise empty_domains_error(empty)
    return seen


def format_rows(seen: dict[str, list[tuple[DomainRows, list[str]]]]) -> str:
    """The table: one line per domain (per distinct count where arms load different rows)."""
    lines = ["training rows per domain (after the loaders' drops, capped by mixture.train_size)"]
    for variants in seen.values():
        for rows, names in variants:
            where = f"  [{', '.join(names)}]" if len(variants) > 1 else ""
            lines.append(f"  {rows.describe()}{where}")
    return "\n".join(lines)
