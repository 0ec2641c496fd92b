"""Data report: per-domain counts, prompt lengths and dropped rows of the configured tasks.

python -m rlvr.data_report domains=[math,code,science,instruction,agent]
python -m rlvr.data_report experiment=m2rl_rl 'domains=[m2rl/math,m2rl/code]'

Loads exactly what ``rlvr.train`` would (train tasks capped at ``mixture.train_size``, eval
tasks at ``mixture.heldout_size``, micro-suite difficulty from ``mixture.difficulty``) and
prints, for the train and eval parts separately, one line per domain (rows, prompt length
in characters) and one line per source (read, kept, dropped, duplicates). Tasks that cannot
load (e.g. Hub datasets offline) are listed with the reason and make the exit status 1.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.data import MICRO_PREFIX

log = logging.getLogger(__name__)


@dataclass
class Part:
    """The rows of one part (train or eval) of every domain, with their load accounting."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    quality: Any = None  # tasks.quality.QualityLog
    failures: dict[str, str] = field(default_factory=dict)  # task -> reason


def _load(task: str, split: str, n: int, difficulty: Any, run: RunConfig, quality) -> list[dict]:
    """Rows of one task as ``rlvr.data`` loads them, with drops counted in ``quality``."""
    seed = run.eval.seed if split == "heldout" else run.trainer.seed
    if task.startswith(MICRO_PREFIX):
        from tasks import micro

        domain = task[len(MICRO_PREFIX) :]
        rows = micro.generate(domain, n, seed=seed, difficulty=difficulty, split=split)
        counts = quality.counts(f"{task}/{split}")
        counts.read += len(rows)
        counts.kept += len(rows)
        return rows
    from tasks.registry import load_task_rows

    return load_task_rows(task, limit=n, data_dir=run.paths.data_dir, seed=seed, quality=quality)


def load_part(run: RunConfig, part: str) -> Part:
    """``part`` is "train" (``train_tasks``) or "eval" (``eval_tasks``, held-out split)."""
    from tasks.quality import QualityLog

    out = Part(part, quality=QualityLog())
    split = "train" if part == "train" else "heldout"
    limit = run.mixture.train_size if part == "train" else run.mixture.heldout_size
    for domain, dc in sorted(run.domains.items()):
        tasks = dc.train_tasks if part == "train" else dc.eval_tasks
        difficulty = run.mixture.difficulty.get(domain)
        for task in tasks:
            try:
                out.rows += _load(task, split, limit, difficulty, run, out.quality)
            except Exception as err:  # noqa: BLE001  (a report lists every task it cannot load)
                out.failures[task] = f"{type(err).__name__}: {err}"
                log.error("%s (%s): cannot load: %s", task, domain, err)
    return out


def overlap(train: Part, heldout: Part) -> dict[str, int]:
    """Eval rows per domain whose id or normalised prompt also appears in training."""
    from tasks.quality import normalise_prompt, prompt_text

    seen = {r["id"] for r in train.rows} | {normalise_prompt(prompt_text(r)) for r in train.rows}
    leaks: dict[str, int] = {}
    for r in heldout.rows:
        if r["id"] in seen or normalise_prompt(prompt_text(r)) in seen:
            leaks[r["domain"]] = leaks.get(r["domain"], 0) + 1
    return leaks


def format_part(part: Part) -> str:
    from tasks.quality import domain_stats, format_report

    lines = [f"== {part.name}: {len(part.rows)} rows =="]
    if part.rows:
        lines.append(format_report(domain_stats(part.rows), part.quality))
    lines += [f"unavailable  {task}: {reason}" for task, reason in sorted(part.failures.items())]
    return "\n".join(lines)


def build_report(run: RunConfig) -> tuple[str, bool]:
    """The report text, and whether every configured task loaded."""
    train, heldout = load_part(run, "train"), load_part(run, "eval")
    leaks = overlap(train, heldout)
    lines = [
        f"data report  experiment={run.experiment}  domains={','.join(sorted(run.domains))}  "
        f"train_size={run.mixture.train_size}  heldout_size={run.mixture.heldout_size}",
        format_part(train),
        format_part(heldout),
        "train/eval overlap (id or prompt): "
        + (", ".join(f"{d}: {n}" for d, n in sorted(leaks.items())) or "none"),
    ]
    return "\n\n".join(lines), not (train.failures or heldout.failures)


def main() -> None:
    from rlvr.cli import hydra_entry

    def body(run: RunConfig, run_dir: Path) -> None:
        text, complete = build_report(run)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "data_report.txt").write_text(text + "\n")
        sys.stdout.write(text + "\n")
        if not complete:
            sys.exit(1)

    hydra_entry("data", body)


if __name__ == "__main__":
    main()
