"""Results of weights already evaluated, reused: a model bit for bit equal to one evaluated
with the same settings gets that model's records instead of a second evaluation.

Two folders of a study can hold the same weights (RAM+ reduces to RAM where no tensor has
weights only one expert changed, as on the embedded model), and sampling is seeded by the
evaluation settings alone, so evaluating both draws the same samples twice. A folder's
fingerprint hashes every file that decides what the model generates (weights, config,
tokenizer, chat template); records of how it was made (``merge.json``, mergekit's config,
training arguments) are left out. Each summary carries its ``reuse_key`` (fingerprint,
benchmark, every setting of the run but its name and model list), and an evaluation whose key
a finished summary in the same study already has copies that summary's records.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

# how the model was made, not what it does: two merges that came out equal differ only here
PROVENANCE = frozenset({"merge.json", "mergekit_config.yml", "training_args.bin", "README.md", "summary.json"})
# Every setting an evaluation reads (the study hashes its evaluation stages over the same list)
EVAL_READS = (
    "model",
    "domains",
    "mixture.difficulty",
    "algo.strip_think",
    "algo.format_gate",
    "eval",
    "sandbox",
    "paths.data_dir",
)
CHUNK = 1 << 20
_known: dict[tuple, str] = {}  # (folder, each file's name, size and mtime) -> fingerprint


def weights_fingerprint(path: str | Path) -> str | None:
    """A hash of the model folder's files that decide its outputs; None for what is not a
    local folder (a Hub id or ``tiny``: built or fetched, never compared). Remembered while
    the files' sizes and times stay (the study's driver asks again at every poll)."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name not in PROVENANCE)
    if not files:
        return None
    known = (str(folder.resolve()), tuple((f.name, *_size_and_time(f)) for f in files))
    if known not in _known:
        _known[known] = _hash(files)
    return _known[known]


def _size_and_time(file: Path) -> tuple[int, int]:
    stat = file.stat()
    return stat.st_size, stat.st_mtime_ns


def _hash(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as fh:
            while block := fh.read(CHUNK):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def reuse_key(fingerprint: str | None, bench: str, run: Any) -> str | None:
    """What decides one benchmark's records: the weights, the benchmark, and every setting an
    evaluation reads (``EVAL_READS``) but the models it lists (their labels are all that
    differ) and the study folder (a study copied elsewhere keeps its twins)."""
    if fingerprint is None:
        return None
    text = json.dumps([fingerprint, bench, eval_settings(run)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def shard_key(model: str, fingerprint: str | None, bench: str, run: Any, *more: Any) -> str:
    """What decides a shard's records (``rlvr.evaluation.shards``): the model (its path, and
    its fingerprint where it has one), the benchmark, the settings ``reuse_key`` hashes and
    ``more`` (the decoding after fitting it to the model, the format gate)."""
    parts = [model, fingerprint, bench, eval_settings(run), *more]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def eval_settings(run: Any) -> dict[str, Any]:
    """Every setting of ``EVAL_READS`` but the models listed and the study folder."""
    plain = dataclasses.asdict(run) if dataclasses.is_dataclass(run) else dict(run)
    settings = {dotted: _setting(plain, dotted) for dotted in EVAL_READS}
    settings["eval"] = {k: v for k, v in settings["eval"].items() if k not in ("models", "out_dir")}
    return settings


def _setting(plain: dict, dotted: str) -> Any:
    for key in dotted.split("."):
        plain = plain.get(key) if isinstance(plain, dict) else None
    return plain


def find_twin(root: Path, label: str, bench: str, key: str | None) -> Path | None:
    """Another model's folder under ``root`` (``<study>/eval``) whose finished ``bench``
    summary has ``key``, with its records beside it."""
    if key is None or not root.is_dir():
        return None
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != label):
        summary = folder / f"{bench}.json"
        if not (summary.is_file() and (folder / f"{bench}.jsonl").is_file()):
            continue
        try:
            if json.loads(summary.read_text()).get("reuse_key") == key:
                return folder
        except (OSError, json.JSONDecodeError):
            continue  # being written or damaged: not a twin to copy from
    return None


def copy_twin(twin: Path, label: str, bench: str, path: str) -> tuple[list[dict], dict]:
    """The twin's records and summary for ``bench``, relabelled as ``label``'s (at ``path``)."""
    records = [
        {**json.loads(line), "model": label}
        for line in (twin / f"{bench}.jsonl").read_text().splitlines()
        if line.strip()
    ]
    summary = json.loads((twin / f"{bench}.json").read_text())
    summary.update(model=label, model_path=path, reused_from=twin.name, seconds=0.0, sampling_s=0.0)
    summary.pop("samples_per_s", None)  # nothing was sampled (a profile must not count it twice)
    return records, summary
