"""Merge per-domain expert models into one with mergekit, driven from our config.

python -m rlvr.merge merge=ties merge.base=outputs/sft/final \
    'merge.models=[outputs/study/math,outputs/study/code]'
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.merging.presets import PRESETS, base_policy, resolve
from rlvr.models.loading import model_folder

log = logging.getLogger(__name__)

MERGE_INFO = "merge.json"
MERGEKIT_YAML = "mergekit_config.yml"


def _mergekit_ref(folder: Path, base: Path | None) -> str:
    """mergekit's model string; a LoRA adapter becomes ``<its base>+<adapter>`` (merged first)."""
    if (folder / "config.json").is_file():
        return str(folder)
    adapter = json.loads((folder / "adapter_config.json").read_text())
    named = adapter.get("base_model_name_or_path")
    parent = Path(named) if named and Path(named).is_dir() else base
    if parent is None:
        raise ConfigError(f"LoRA adapter {folder} names no local base model; set merge.base")
    return f"{parent.resolve()}+{folder}"


def mergekit_config(
    method: str,
    base: Path | None,
    models: Sequence[Path],
    params: Mapping[str, Any],
    dtype: str,
    out_dtype: str | None = None,
) -> dict[str, Any]:
    """The mergekit YAML as a dict: shared parameters at top level apply to every model;
    ``dtype`` is what mergekit computes in, ``out_dtype`` what it writes (None: ``dtype``)."""
    policy = base_policy(method)
    if policy == "required" and base is None:
        raise ConfigError(f"merge method {method!r} needs merge.base (the SFT model)")
    cfg: dict[str, Any] = {
        "merge_method": method,
        "models": [{"model": _mergekit_ref(m, base)} for m in models],
        "parameters": dict(params),
        "dtype": dtype,
    }
    if out_dtype is not None:
        cfg["out_dtype"] = out_dtype
    if base is not None and policy in ("required", "optional"):
        cfg["base_model"] = str(base)
    return cfg


def merge_models(
    method: str,
    base: str | Path | None,
    models: Sequence[str | Path],
    params: Mapping[str, Any] | None,
    out_dir: str | Path,
    seed: int = 0,
    dtype: str = "float32",
    name: str | None = None,
    out_dtype: str = "auto",
) -> Path:
    """Merge ``models`` (run or model folders) onto ``base`` with a preset or mergekit method.

    ``name`` labels the merge in ``merge.json`` (default: ``method``), e.g. the preset name
    when a Hydra preset spells out its mergekit method. The merge is computed in ``dtype``
    and written in ``out_dtype``; ``auto`` writes the inputs' dtype (``input_dtype``).
    """
    import torch
    import yaml
    from mergekit.config import MergeConfiguration
    from mergekit.merge import run_merge
    from mergekit.options import MergeOptions

    started = time.perf_counter()
    if not models:
        raise ConfigError("merge.models is empty; list the expert run folders to merge")
    preset = resolve(method, params)
    base_dir = model_folder(base) if base else None
    folders = [model_folder(m) for m in models]
    out = Path(out_dir).expanduser().resolve()
    written = input_dtype([*folders, *([base_dir] if base_dir else [])], dtype, out_dtype)
    out_dtype_key = written if written != dtype else None  # mergekit writes dtype by default
    raw = mergekit_config(preset.method, base_dir, folders, preset.params, dtype, out_dtype_key)
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    torch.manual_seed(seed)  # DARE's random drops draw from torch's global generator
    options = MergeOptions(
        random_seed=seed,
        quiet=True,
        write_model_card=False,
        copy_tokenizer=False,
        lora_merge_cache=str(out.parent / ".lora_merged"),
    )
    run_merge(MergeConfiguration.model_validate(raw), str(staging), options)
    _copy_tokenizer(_tokenizer_source(base_dir, folders), staging)
    (staging / MERGEKIT_YAML).write_text(yaml.safe_dump(raw, sort_keys=False))
    info = {
        "name": name or method,
        "method": method,
        "mergekit_method": preset.method,
        "params": dict(preset.params),
        "base": str(base_dir) if base_dir else None,
        "models": [str(f) for f in folders],
        "seed": seed,
        "dtype": dtype,
        "out_dtype": written,
        "seconds": time.perf_counter() - started,
    }
    info["device_seconds"] = info["seconds"]  # one process
    (staging / MERGE_INFO).write_text(json.dumps(info, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    log.info("merged %d models (%s) in %.1f s -> %s", len(folders), info["name"], info["seconds"], out)
    return out


def input_dtype(folders: Sequence[Path], dtype: str, out_dtype: str = "auto") -> str:
    """The dtype a merge writes: ``out_dtype`` unless ``auto``; ``auto``: the dtype the input
    models' config.json records when they agree, else float32 (never narrower than an input),
    or ``dtype`` where none records one."""
    if out_dtype != "auto":
        return out_dtype
    found = {d for f in folders if (d := _recorded_dtype(f)) is not None}
    if len(found) == 1:
        return found.pop()
    if found:
        log.info("merge inputs have dtypes %s; writing float32", sorted(found))
        return "float32"
    return dtype


def _recorded_dtype(folder: Path) -> str | None:
    """A model folder's weights dtype from its config.json (an adapter: None)."""
    config = folder / "config.json"
    if not config.is_file():
        return None
    data = json.loads(config.read_text())
    value = data.get("dtype") or data.get("torch_dtype")
    return str(value).removeprefix("torch.") if value else None


def _tokenizer_source(base: Path | None, folders: Sequence[Path]) -> Path:
    """The base model's folder, else the first input (or adapter's base) that has a tokenizer."""
    adapters = [Path(_mergekit_ref(f, base).partition("+")[0]) for f in folders]
    for candidate in (base, *folders, *adapters):
        if candidate is not None and (candidate / "tokenizer_config.json").is_file():
            return candidate
    raise ConfigError(f"no tokenizer in the merge inputs {[str(f) for f in folders]}")


def _copy_tokenizer(source: Path, target: Path) -> None:
    """The merged model speaks the base model's tokenizer and chat template."""
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(target))
    generation = source / "generation_config.json"
    if generation.is_file():
        shutil.copy2(generation, target / "generation_config.json")


def default_out_dir(run: RunConfig, name: str) -> Path:
    return Path(run.paths.output_root) / run.experiment / "merges" / name


def merge_stage(run: RunConfig, run_dir: Path) -> Path:
    """The ``merge`` entry point's body: one merge as configured."""
    m = run.merge
    name = m.name or m.method
    out = Path(m.out_dir) if m.out_dir else default_out_dir(run, name)
    return merge_models(m.method, m.base, m.models, m.params, out, m.seed, m.dtype, name, m.out_dtype)


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("merge", merge_stage)


__all__ = ["PRESETS", "merge_models", "model_folder"]

if __name__ == "__main__":
    main()
