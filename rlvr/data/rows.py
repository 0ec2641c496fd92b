"""Build the training rows, SFT demonstrations and held-out rows for the selected domains."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rlvr.config import RunConfig

log = logging.getLogger(__name__)

MICRO_PREFIX = "micro_"


@dataclass(frozen=True)
class DomainData:
    train: list[dict[str, Any]]
    heldout: list[dict[str, Any]]


def task_files(run: RunConfig, domain: str, task: str) -> tuple[str, ...]:
    """The local files ``task`` reads (``domains.<d>.data_files``), with the blend's
    placeholders resolved first when ``domains.<d>.resolve_files`` names their sources."""
    from rlvr.config.domain_files import files_by_task

    dc = run.domains[domain]
    files = files_by_task(domain, dc).get(task, ())
    if files and dc.resolve_files:
        from tasks.adapters.blend_placeholders import resolved_files

        sources = {hub: tuple(paths) for hub, paths in dc.resolve_files.items()}
        return tuple(resolved_files(files, sources, run.paths.cache_dir))
    return files


def load_task(
    run: RunConfig, domain: str, task: str, *, split: str, n: int, quality: Any = None
) -> list[dict[str, Any]]:
    """Rows of one task as training and evaluation see them; drops counted in ``quality``."""
    # Held-out rows come from eval.seed, not the training seed: every seed and arm of a study
    # is measured on the same prompts, so seed variance is training variance alone.
    seed = run.eval.seed if split == "heldout" else run.trainer.seed
    difficulty = run.mixture.difficulty.get(domain)
    if task.startswith(MICRO_PREFIX):
        from tasks import micro

        rows = micro.generate(task[len(MICRO_PREFIX) :], n, seed=seed, difficulty=difficulty, split=split)
        if quality is not None:
            counts = quality.counts(f"{task}/{split}")
            counts.read += len(rows)
            counts.kept += len(rows)
        return rows
    from tasks.registry import load_task_rows

    # Real tasks carry their own split (training blends vs test benchmarks).
    return load_task_rows(
        task,
        limit=n,
        data_dir=run.paths.data_dir,
        seed=seed,
        data_files=task_files(run, domain, task) or None,
        quality=quality,
    )


def build_domain_data(run: RunConfig) -> dict[str, DomainData]:
    """Rows per domain: training prompts and held-out prompts that never share an id."""
    out: dict[str, DomainData] = {}
    size, held = run.mixture.train_size, run.mixture.heldout_size
    for domain, dc in run.domains.items():
        train: list[dict] = []
        for task in dc.train_tasks:
            train += load_task(run, domain, task, split="train", n=size)
        heldout: list[dict] = []
        for task in dc.eval_tasks:
            heldout += load_task(run, domain, task, split="heldout", n=held)
        train_ids = {r["id"] for r in train}
        overlap = [r["id"] for r in heldout if r["id"] in train_ids]
        if overlap:
            raise RuntimeError(f"{domain}: {len(overlap)} held-out rows also in training, e.g. {overlap[:3]}")
        out[domain] = DomainData(train=train, heldout=heldout)
        log.info("domain %s: %d train rows, %d held-out rows", domain, len(train), len(heldout))
    return out


def sft_generators(run: RunConfig, domain: str) -> list[str]:
    """Micro-suite generators of a domain's SFT demonstrations: its ``micro_<name>`` training
    tasks (e.g. ``micro_parallel_math``), or the domain's own generator when it names none."""
    tasks = run.domains[domain].train_tasks
    return [t[len(MICRO_PREFIX) :] for t in tasks if t.startswith(MICRO_PREFIX)] or [domain]


def _even_split(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def sft_examples(run: RunConfig, seed: int) -> list[dict[str, Any]]:
    """Chat examples (prompt + assistant demonstration) from the micro-suite, per domain."""
    from rlvr.data.agent import AGENT
    from rlvr.data.agent import sft_examples as agent_sft_examples
    from tasks import micro

    examples: list[dict[str, Any]] = []
    for domain in run.domains:
        n = run.sft.domain_examples.get(domain, run.sft.examples_per_domain)
        names = sft_generators(run, domain)
        rows = [
            row
            for name, count in zip(names, _even_split(n, len(names)), strict=True)
            for row in micro.generate(name, count, seed=seed, difficulty=run.mixture.difficulty.get(domain))
        ]
        if domain == AGENT:  # tool-call turns, and the closing turn after the tool results
            examples += agent_sft_examples(rows)
            continue
        for row in rows:
            examples.append(
                {
                    "prompt": row["prompt"],
                    "completion": [{"role": "assistant", "content": micro.demonstration(row)}],
                    "domain": domain,
                }
            )
    log.info("SFT demonstrations: %s", dict(Counter(e["domain"] for e in examples)))
    return examples
