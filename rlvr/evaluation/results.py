"""Evaluation results on disk: per-sample records, the summary, the model's provenance.

``<study>/eval/<label>/<benchmark>.jsonl`` (one record per sample), ``<benchmark>.json`` (the
summary, written last) and ``model.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig

MODEL_INFO = "model.json"


def study_dir(run: RunConfig) -> Path:
    return Path(run.eval.out_dir or Path(run.paths.output_root) / run.experiment)


def provenance(path: str) -> dict[str, Any]:
    """What the model is, read from its folder: a merge (merge.json) or a training run's final/."""
    folder = Path(path)
    info: dict[str, Any] = {"path": path}
    if (folder / "merge.json").is_file():
        info["merge"] = json.loads((folder / "merge.json").read_text())
    summary = folder.parent / "summary.json"
    if folder.name == "final" and summary.is_file():
        info["run_dir"] = str(folder.parent)
        facts = json.loads(summary.read_text())
        info["domains"] = facts.get("domains", [])
        if "distill" in facts:  # an MT-OPD student: its teachers, objective and held-out KL
            info["distill"] = facts["distill"]
    return info


def sample_records(
    label: str, bench: str, rows: Sequence[dict], completions: list, verdicts: list, mode: str
) -> list[dict[str, Any]]:
    return [
        {
            "model": label,
            "benchmark": bench,
            "id": row["id"],
            "mode": mode,
            "sample": i,
            "completion": text,
            "status": v.status.value,
            "score": v.score,
            "extracted": v.extracted,
        }
        for row, texts, vs in zip(rows, completions, verdicts, strict=True)
        for i, (text, v) in enumerate(zip(texts, vs, strict=True))
    ]


def write_results(folder: Path, bench: str, records: list[dict], summary: dict) -> None:
    """JSONL first, summary last (its presence marks the pair finished), both atomically."""
    from rlvr.runs.folders import write_json

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{bench}.jsonl.tmp"
    with tmp.open("w") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    tmp.replace(folder / f"{bench}.jsonl")
    write_json(folder / f"{bench}.json", summary)
