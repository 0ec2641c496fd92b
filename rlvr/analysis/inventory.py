"""Which models an analysis compares with the SFT model: the study's, or ones named in config.

A study folder (``rlvr.study``) holds ``sft/final``, ``experts/<domain>-seed<s>/final``,
``mixed/seed<s>/final`` and ``merges/<method>-seed<s>/``; labels are those of the report's
tables (``math-seed0``, ``mixed-seed0``, ``ties-seed0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import ConfigError
from rlvr.merging.presets import PRESETS
from rlvr.reporting.seeds import seed_rank, split_seed
from rlvr.reporting.tables import infer_role
from tasks.schema import DOMAINS

ROLE_ORDER = ("expert", "mixed", "merge", "other")


@dataclass(frozen=True)
class ModelSpec:
    label: str
    role: str  # expert | mixed | merge | other
    path: Path  # a folder with safetensors weights


def _is_model(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def discover(study: Path) -> list[ModelSpec]:
    """Every finished expert, mixed model and merge in the study folder, in table order."""
    found = [ModelSpec(f.parent.name, "expert", f) for f in sorted(study.glob("experts/*/final"))]
    found += [ModelSpec(f"mixed-{f.parent.name}", "mixed", f) for f in study.glob("mixed/*/final")]
    found += [ModelSpec(f.name, "merge", f) for f in study.glob("merges/*")]
    return sorted((m for m in found if _is_model(m.path)), key=_order)


def _order(m: ModelSpec) -> tuple:
    stem, seed = split_seed(m.label)
    known = [*DOMAINS, *PRESETS]  # experts in domain order, merges in the paper's order
    rank = known.index(stem) if stem in known else len(known)
    return ROLE_ORDER.index(m.role), rank, stem, seed_rank(seed)


def parse(entries: Sequence[str]) -> list[ModelSpec]:
    """``label=path`` entries (a bare path is labelled by its folder, ``final``'s parent)."""
    models = []
    for entry in entries:
        label, sep, path = entry.partition("=")
        folder = Path(path if sep else label).expanduser()
        if not sep:
            label = folder.parent.name if folder.name == "final" else folder.name
        if not _is_model(folder):
            raise ConfigError(f"analyze.models: {folder} is not a saved model with safetensors")
        role = infer_role(label, {}, {})
        models.append(ModelSpec(label, role if role in ROLE_ORDER else "other", folder))
    return models


def resolve(study: Path, base: str | None, entries: Sequence[str]) -> tuple[Path, list[ModelSpec]]:
    """The SFT model and the models to compare with it; fail naming the fix when absent."""
    sft = Path(base).expanduser() if base else study / "sft" / "final"
    if not _is_model(sft):
        raise ConfigError(f"no SFT model at {sft}: set analyze.base=<folder> or run the study's sft stage")
    models = parse(entries) if entries else discover(study)
    if not models:
        raise ConfigError(
            f"no experts, mixed models or merges under {study}: run the study first, or name "
            "them with analyze.models=[label=path,...]"
        )
    return sft, models
