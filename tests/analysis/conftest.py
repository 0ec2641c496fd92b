"""Constructed models for the analysis tests: named tensors saved as safetensors model folders,
and a study folder laid out as ``rlvr.study`` leaves it, built from the tiny model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file


def save_model(folder: Path, tensors: Mapping[str, torch.Tensor], shards: int = 1) -> Path:
    """A model folder: ``config.json`` and the tensors in ``shards`` files (with an index when
    there are several, as ``save_pretrained`` writes them)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "constructed"}))
    names = sorted(tensors)
    if shards == 1:
        save_file({n: tensors[n].contiguous() for n in names}, str(folder / "model.safetensors"))
        return folder
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n].contiguous() for n in names[s::shards]}
        save_file(part, str(folder / file))
        weight_map.update(dict.fromkeys(part, file))
    index = {"metadata": {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def perturb(tensors: Mapping[str, torch.Tensor], density: float, seed: int, scale: float = 0.05):
    """A copy with a random share ``density`` of every tensor's entries moved by ~``scale``."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, t in tensors.items():
        keep = torch.rand(t.shape, generator=g) < density
        noise = scale * torch.randn(t.shape, generator=g) * (t.abs() + 0.01)
        out[name] = torch.where(keep, t + noise, t)
    return out


def make_study(study: Path, sft: Mapping[str, torch.Tensor]) -> Path:
    """A study folder as ``rlvr.study`` lays it out: sft/final (two shards), the math and code
    experts (the code one in three shards), a mixed arm and a merge of the two experts."""
    save_model(study / "sft" / "final", sft, shards=2)
    math_ = perturb(sft, 0.3, 1)
    code = perturb(sft, 0.2, 2)
    save_model(study / "experts" / "math-seed0" / "final", math_)
    save_model(study / "experts" / "code-seed0" / "final", code, shards=3)
    save_model(study / "mixed" / "seed0" / "final", perturb(sft, 0.5, 3))
    save_model(study / "merges" / "ties-seed0", {n: (math_[n] + code[n]) / 2 for n in sft})
    return study


def small_tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    """A few Qwen2-named tensors (about 7k parameters): one of each module group."""
    g = torch.Generator().manual_seed(seed)
    shapes = {
        "model.embed_tokens.weight": (64, 16),
        "model.layers.0.self_attn.q_proj.weight": (16, 16),
        "model.layers.0.self_attn.q_proj.bias": (16,),
        "model.layers.0.mlp.up_proj.weight": (64, 16),
        "model.layers.0.mlp.down_proj.weight": (16, 64),
        "model.layers.0.input_layernorm.weight": (16,),
        "model.norm.weight": (16,),
    }
    return {n: torch.randn(s, generator=g) for n, s in shapes.items()}


@pytest.fixture
def small_study(tmp_path) -> Path:
    return make_study(tmp_path / "study", small_tensors())


@pytest.fixture
def tiny_study(tmp_path, tiny_model_dir) -> Path:
    """The study layout built from the embedded tiny model's weights (1.7M parameters)."""
    study = make_study(tmp_path / "study", load_file(str(tiny_model_dir / "model.safetensors")))
    shutil.copy(tiny_model_dir / "config.json", study / "sft" / "final" / "config.json")
    return study


def write_eval(root: Path, label: str, bench: str, items: Mapping[str, list[float]], path: str = "") -> Path:
    """``<root>/eval/<label>/<bench>.{jsonl,json}`` and ``model.json`` as ``rlvr.evaluate``
    leaves them: one sampled record per score (``correct`` when it is 1), and the summary."""
    folder = root / "eval" / label
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {
            "model": label,
            "benchmark": bench,
            "id": item,
            "mode": "sample",
            "sample": i,
            "completion": f"<think>t</think>\nAnswer: {item}-{i}",
            "extracted": f"{item}-{i}",
            "status": "correct" if s == 1 else "wrong",
            "score": s,
        }
        for item, scores in items.items()
        for i, s in enumerate(scores)
    ]
    (folder / f"{bench}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    avg = sum(r["score"] for r in records) / max(1, len(records))
    domain = bench.removeprefix("micro_")
    summary = {"model": label, "benchmark": bench, "domain": domain, "avg_at_k": avg}
    (folder / f"{bench}.json").write_text(json.dumps(summary))
    (folder / "model.json").write_text(json.dumps({"label": label, "path": path or label}))
    return folder
