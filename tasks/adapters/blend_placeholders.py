"""Resolving the Nemotron blend's ``_hf_placeholder`` rows from local copies of their sources.

The Hub's copy of nvidia/Nemotron-3-Nano-RL-Training-Blend leaves its DAPO-Math-17k and
Skywork-OR1 math rows as placeholders: ``{"row": <index into the source split>,
"question_template": ...}`` (DAPO: ``{prefix, suffix}`` around the source question; Skywork: a
string with ``{question}``). NVIDIA's ``create_nanov3_jsonl.py`` fills them from the Hub; this
module does the same from local files of those splits, in their Hub row order, and writes the
resolved blend as JSONL in a cache folder (so the task loader reads it like any local copy).
Placeholders it cannot fill stay placeholders, with the reason, and the adapter drops them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.files import read_json_records

log = logging.getLogger(__name__)

PLACEHOLDER = "_hf_placeholder"
PROBLEM = "_hf_placeholder_problem"  # set on placeholders this module could not fill


@dataclass(frozen=True)
class Source:
    """The Hub dataset a blend sub-dataset's placeholders index into."""

    hub_id: str
    split: str
    template: str  # "dapo" (prefix/suffix) or "skywork" ("{question}")


# Blend ``dataset`` value -> source (from the Nemotron recipe's placeholder resolver)
SOURCES: Mapping[str, Source] = {
    "nano_v3_sft_profiled_dapo17k": Source("BytedTsinghua-SIA/DAPO-Math-17k", "train", "dapo"),
    "nano_v3_sft_profiled_skywork_no_omni": Source("Skywork/Skywork-OR1-RL-Data", "math", "skywork"),
}
HUB_IDS: tuple[str, ...] = tuple(sorted({s.hub_id for s in SOURCES.values()}))


def fix_hint(source: Source) -> str:
    return (
        f"give a local copy of {source.hub_id} (split {source.split!r}, Hub row order) as "
        f"domains.math.resolve_files={{{source.hub_id}: [<file>.parquet or .jsonl]}}"
    )


def unresolved_reason(record: Mapping[str, Any]) -> str:
    """The drop reason of a placeholder record: why it stayed one, and the fix."""
    source = SOURCES.get(str(record.get("dataset")))
    if source is None:
        return f"_hf_placeholder of unknown sub-dataset {record.get('dataset')!r}"
    problem = record.get(PROBLEM)
    if problem:
        return f"unresolved _hf_placeholder ({problem})"
    return f"unresolved _hf_placeholder: {fix_hint(source)}"


def read_records(files: Sequence[str | os.PathLike[str]]) -> Iterator[Mapping[str, Any]]:
    """Records of local JSONL/JSON (optionally gzipped) or Parquet files, in order."""
    for name in files:
        path = Path(name).expanduser()
        if path.suffix == ".parquet":
            import datasets

            yield from datasets.load_dataset("parquet", data_files=str(path), split="train")
        else:
            yield from read_json_records(path)


def _answer(value: Any) -> str:
    """Skywork stores its answers as JSON text of a list ("[\"7\"]"); the first is the gold."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return str(parsed[0]) if isinstance(parsed, list) and parsed else value
    return "" if value is None else str(value)


def _question(source: Source, text: str, template: Any) -> str:
    if source.template == "dapo" and isinstance(template, Mapping):
        return f"{template.get('prefix', '')}{text}{template.get('suffix', '')}"
    if source.template == "skywork" and isinstance(template, str) and "{question}" in template:
        return template.replace("{question}", text)
    return text


def resolve(record: Mapping[str, Any], tables: Mapping[str, Sequence[Mapping]]) -> dict[str, Any]:
    """The record with its question, answer and prompt filled in; a placeholder that cannot
    be filled comes back unchanged but for ``_hf_placeholder_problem``."""
    out = dict(record)
    source = SOURCES.get(str(record.get("dataset")))
    if PLACEHOLDER not in record or source is None or source.hub_id not in tables:
        return out
    holder = record[PLACEHOLDER]
    holder = json.loads(holder) if isinstance(holder, str) else holder
    rows = tables[source.hub_id]
    index = holder.get("row") if isinstance(holder, Mapping) else None
    if not isinstance(index, int) or not 0 <= index < len(rows):
        out[PROBLEM] = f"row {index!r} is outside the {len(rows)} rows given for {source.hub_id}"
        return out
    source_row = rows[index]
    try:
        text = source_row["prompt"][0]["content"]
        answer = _answer(source_row["reward_model"]["ground_truth"])
    except (KeyError, IndexError, TypeError):
        out[PROBLEM] = f"{source.hub_id} row {index} lacks prompt[0].content or reward_model"
        return out
    question = _question(source, str(text), holder.get("question_template"))
    del out[PLACEHOLDER]
    out.update(
        question=question,
        expected_answer=answer,
        responses_create_params={"input": [{"role": "user", "content": question}]},
    )
    return out


def _fingerprint(paths: Iterable[str | os.PathLike[str]]) -> str:
    digest = hashlib.sha256()
    for p in paths:
        stat = Path(p).expanduser().stat()
        digest.update(f"{Path(p).expanduser().resolve()}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def resolved_files(
    blend_files: Sequence[str],
    sources: Mapping[str, Sequence[str]],
    cache_dir: str | os.PathLike[str],
) -> list[str]:
    """One JSONL holding the blend with its placeholders filled from ``sources`` ({hub id:
    files}); written once per set of inputs (names, sizes, times) under ``cache_dir``."""
    unknown = sorted(set(sources) - set(HUB_IDS))
    if unknown:
        raise ValueError(f"unknown placeholder source {unknown[0]!r}; known: {', '.join(HUB_IDS)}")
    key = _fingerprint([*blend_files, *(f for hub in sorted(sources) for f in sources[hub])])
    out = Path(cache_dir).expanduser() / "resolved_blend" / f"{key}.jsonl"
    if out.is_file():
        return [str(out)]
    tables = {hub: list(read_records(files)) for hub, files in sources.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as fh:
        for record in read_records(blend_files):
            fh.write(json.dumps(resolve(dict(record), tables), ensure_ascii=False, default=str))
            fh.write("\n")
    partial.replace(out)  # complete or absent, never half written
    log.info("resolved blend placeholders into %s", out)
    return [str(out)]
