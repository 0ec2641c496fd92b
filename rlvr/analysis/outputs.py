"""What an analysis leaves: its tables (Markdown + CSV) and figures, an index page, and W&B.

``<study>/analysis/`` holds ``<table>.{md,csv}``, ``<analysis>.png`` and ``analysis.md`` (every
table and figure, in the order analysed); the report links and includes them when present.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import RunConfig
from rlvr.reporting.tables import Table, flat_rows, to_markdown, write_table

INDEX = "analysis.md"


@dataclass(frozen=True)
class Output:
    name: str  # the analysis
    tables: tuple[Table, ...]
    images: tuple[Path, ...]


def write_outputs(outputs: Sequence[Output], folder: Path, note: str = "") -> Path:
    """Every table as Markdown and CSV, then the index page that shows them all."""
    parts = ["# Analyses of the study's models", ""] + ([note, ""] if note else [])
    for out in outputs:
        parts.append(f"## {out.name}")
        for table in out.tables:
            write_table(table, folder)
            parts.append(to_markdown(table))
        parts += [f"![{p.stem}]({p.name})" for p in out.images] + [""]
    index = folder / INDEX
    index.write_text("\n".join(parts))
    return index


def report_section(study: Path) -> list[str]:
    """The analyses' index for the report's page: headings one level down, figures linked
    from ``<study>/report``; nothing when the study has no analyses."""
    index = study / "analysis" / INDEX
    if not index.is_file():
        return []
    body = index.read_text().split("\n", 1)[1].replace("](", "](../analysis/")
    body = re.sub(r"^(#+) ", r"#\1 ", body, flags=re.MULTILINE)
    return [f"## Analyses of the models ([tables](../analysis/{INDEX}))", body]


def log_to_wandb(run: RunConfig, outputs: Sequence[Output], folder: Path) -> None:
    """Tables and figures to the analysis stage's W&B run (no-op when tracking is off)."""
    from rlvr.tracking.wandb_run import open_stage_run

    tracked = open_stage_run(run, folder, "analyze")
    if tracked is None:
        return
    for out in outputs:
        for t in out.tables:
            columns, data = flat_rows(t)
            tracked.table(f"analysis/{t.name}", columns, data)
        tracked.images({f"analysis/{p.stem}": p for p in out.images})
    tracked.finish()
