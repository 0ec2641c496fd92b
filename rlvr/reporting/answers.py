"""What the models wrote: answer lengths per model and benchmark, and the starting model's
answers beside a trained model's on prompts where their verdicts differ.

A reward that checks constraints can be won by short, degenerate answers; lengths and a few
answers side by side let a reader see whether training made the answers better or just shorter.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rlvr.reporting.tables import ModelResult, Table

ANSWER_CHARS = 700  # shown per answer; longer ones are cut with a marker
PROMPT_CHARS = 400
SHRINK_NOTE = (
    "a trained model whose answers shrank far below its start's may be winning its reward with "
    "degenerate answers: compare the answers below"
)


def first_answers(study: Path, label: str, bench: str) -> dict[str, dict[str, Any]]:
    """id -> the record of the greedy answer (the first sample where there is none)."""
    path = study / "eval" / label / f"{bench}.jsonl"
    if not path.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["mode"] == "greedy" or (rec["sample"] == 0 and rec["id"] not in out):
            out[rec["id"]] = rec
    return out


def length_table(study: Path, results: Sequence[ModelResult]) -> Table:
    """Mean words per answer (greedy, else the first sample) for every model and benchmark."""
    benches = sorted({b for r in results for b in r.summaries})
    rows = []
    for r in results:
        cells: list[Any] = [r.label]
        for b in benches:
            answers = first_answers(study, r.label, b)
            words = [len(a["completion"].split()) for a in answers.values()]
            cells.append(round(sum(words) / len(words), 1) if words else "")
        rows.append(tuple(cells))
    return Table(
        "answer_lengths",
        "Answer length (mean words, greedy answer)",
        ("model", *benches),
        tuple(rows),
        (SHRINK_NOTE,),
    )


def answers_markdown(study: Path, results: Sequence[ModelResult], per_bench: int = 2) -> str:
    """For each benchmark, up to ``per_bench`` prompts where the starting model (sft, else base)
    and the first trained model of the benchmark's domain got different verdicts, gains first."""
    start = next((r for role in ("sft", "base") for r in results if r.role == role), None)
    if start is None:
        return ""
    parts = ["## Answers before and after training", ""]
    for bench in sorted(start.summaries):
        trained = _trained_for(bench, results)
        if trained is None:
            continue
        before = first_answers(study, start.label, bench)
        after = first_answers(study, trained.label, bench)
        for rec_id in list(_differing(before, after))[:per_bench]:
            parts += _pair(bench, rec_id, start.label, before[rec_id], trained.label, after[rec_id])
    return "\n".join(parts) + "\n" if len(parts) > 2 else ""


def _trained_for(bench: str, results: Sequence[ModelResult]) -> ModelResult | None:
    from rlvr.evaluation.benchmarks import benchmark_domain

    domain = benchmark_domain(bench)
    for role in ("expert", "mixed"):
        for r in results:
            domains = r.info.get("domains") or []
            if r.role == role and bench in r.summaries and (role == "mixed" or domain in domains):
                return r
    return None


def _differing(before: dict[str, dict], after: dict[str, dict]) -> Iterator[str]:
    shared = [i for i in before if i in after]
    yield from (i for i in shared if after[i]["score"] > before[i]["score"])
    yield from (i for i in shared if after[i]["score"] < before[i]["score"])


def _pair(bench: str, rec_id: str, a: str, ra: dict, b: str, rb: dict) -> list[str]:
    lines = [f"**{bench} / {rec_id}**", ""]
    if prompt := _prompt_text(bench, rec_id):
        lines += [f"> {_cut(prompt, PROMPT_CHARS)}".replace("\n", "\n> "), ""]
    for label, rec in ((a, ra), (b, rb)):
        words = len(rec["completion"].split())
        lines += [f"{label} ({rec['status']}, {words} words):", "", "```text"]
        lines += [_cut(rec["completion"], ANSWER_CHARS).replace("```", "'''"), "```", ""]
    return lines


def _prompt_text(bench: str, rec_id: str) -> str:
    """The user's request for a registered benchmark's row, '' where it cannot be read here."""
    return _requests(bench).get(rec_id, "")


@functools.cache
def _requests(bench: str) -> dict[str, str]:
    from tasks.registry import known_tasks, load_task_rows

    if bench not in known_tasks():
        return {}  # the micro-suite's generated sets: their prompts are not kept by id
    return {
        row["id"]: next((m["content"] for m in row["prompt"] if m["role"] == "user"), "")
        for row in load_task_rows(bench)
    }


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more chars]"
