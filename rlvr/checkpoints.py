"""Find the newest checkpoint that was written completely (a half-written one is never picked)."""

from __future__ import annotations

import json
import re
from pathlib import Path

_CKPT = re.compile(r"^checkpoint-(\d+)$")
# Files the HF Trainer writes last: trainer_state.json comes after weights, optimizer and RNG.
_REQUIRED = ("trainer_state.json",)


def is_complete(folder: Path) -> bool:
    if not all((folder / name).exists() for name in _REQUIRED):
        return False
    has_weights = (
        any(folder.glob("*.safetensors"))
        or any(folder.glob("pytorch_model*.bin"))
        or (folder / "adapter_model.safetensors").exists()
        or _sharded_complete(folder)
    )
    return has_weights and any(folder.glob("rng_state*.pth")) and _state_parses(folder)


def _sharded_complete(folder: Path) -> bool:
    """FSDP ``SHARDED_STATE_DICT`` checkpoints: torch.distributed.checkpoint folders, whose
    ``.metadata`` is written after every rank's shard, for the model and the optimizer."""
    models = list(folder.glob("pytorch_model_fsdp_*"))
    optimizers = list(folder.glob("optimizer_*"))
    return bool(models) and all(
        (d / ".metadata").exists() for d in models + optimizers if d.is_dir()
    )


def _state_parses(folder: Path) -> bool:
    """trainer_state.json is written in place, so a kill mid-write leaves truncated JSON."""
    try:
        json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return True


def latest_complete_checkpoint(root: Path) -> Path | None:
    if not root.exists():
        return None
    found = sorted(
        ((int(m.group(1)), p) for p in root.iterdir() if (m := _CKPT.match(p.name)) and p.is_dir()),
        reverse=True,
    )
    for _, path in found:
        if is_complete(path):
            return path
    return None
