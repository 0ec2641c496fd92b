"""Resume picks the newest complete checkpoint; a half-written one is never picked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.training.checkpoints import is_complete, latest_complete_checkpoint

# The files the HF Trainer writes into checkpoint-N, in its order: weights, optimizer and
# scheduler, RNG state, and trainer_state.json last.
FULL = ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json")


def write_checkpoint(root: Path, step: int, files=FULL, name: str | None = None) -> Path:
    folder = root / (name or f"checkpoint-{step}")
    folder.mkdir(parents=True)
    for f in files:
        content = json.dumps({"global_step": step}) if f == "trainer_state.json" else "x"
        (folder / f).write_text(content)
    return folder


def without(*names: str) -> tuple[str, ...]:
    return tuple(f for f in FULL if f not in names)


# (files present, complete?)
CASES = [
    (FULL, True),
    (without("trainer_state.json"), False),  # killed before the trainer state was written
    (without("rng_state.pth"), False),  # killed before the RNG state: resume would diverge
    (without("model.safetensors"), False),
    (without("rng_state.pth") + ("rng_state_0.pth", "rng_state_1.pth"), True),  # 2 processes
    (without("model.safetensors") + ("adapter_model.safetensors",), True),  # LoRA
    (without("model.safetensors") + ("pytorch_model.bin",), True),
    ((), False),
]


@pytest.mark.parametrize(("files", "complete"), CASES)
def test_is_complete_needs_weights_rng_and_trainer_state(files, complete, tmp_path):
    assert is_complete(write_checkpoint(tmp_path, 3, files)) is complete


def test_half_written_newest_checkpoint_falls_back_to_the_previous(tmp_path):
    good = write_checkpoint(tmp_path, 2)
    write_checkpoint(tmp_path, 4, without("trainer_state.json"))
    write_checkpoint(tmp_path, 6, without("rng_state.pth"))
    assert latest_complete_checkpoint(tmp_path) == good


def test_truncated_trainer_state_is_not_complete(tmp_path):
    """trainer_state.json is written in place; a kill during that write leaves broken JSON."""
    good = write_checkpoint(tmp_path, 2)
    bad = write_checkpoint(tmp_path, 4)
    (bad / "trainer_state.json").write_text('{"global_step": 4, "log_hi')
    assert not is_complete(bad)
    assert latest_complete_checkpoint(tmp_path) == good


def test_steps_compare_as_numbers_not_strings(tmp_path):
    write_checkpoint(tmp_path, 9)
    ten = write_checkpoint(tmp_path, 10)
    assert latest_complete_checkpoint(tmp_path) == ten


@pytest.mark.parametrize("name", ["tmp-checkpoint-8", "checkpoint-8.tmp", "checkpoint-x", "ckpt-8"])
def test_other_folder_names_are_ignored(name, tmp_path):
    good = write_checkpoint(tmp_path, 2)
    write_checkpoint(tmp_path, 8, name=name)
    assert latest_complete_checkpoint(tmp_path) == good


def test_a_file_named_like_a_checkpoint_is_ignored(tmp_path):
    good = write_checkpoint(tmp_path, 2)
    (tmp_path / "checkpoint-5").write_text("not a folder")
    assert latest_complete_checkpoint(tmp_path) == good


def test_no_checkpoint_or_no_folder_gives_none(tmp_path):
    assert latest_complete_checkpoint(tmp_path / "absent") is None
    write_checkpoint(tmp_path, 1, without("trainer_state.json"))
    assert latest_complete_checkpoint(tmp_path) is None


SHARDED = ("scheduler.pt", "rng_state_0.pth", "rng_state_1.pth", "trainer_state.json")


@pytest.mark.parametrize(
    ("metadata", "complete"),
    [
        ({"pytorch_model_fsdp_0", "optimizer_0"}, True),
        ({"pytorch_model_fsdp_0"}, False),  # killed while the optimizer shards were written
        ({"optimizer_0"}, False),  # the model shards never finished
        (set(), False),
    ],
)
def test_fsdp_sharded_checkpoints_need_every_distcp_metadata(metadata, complete, tmp_path):
    """SHARDED_STATE_DICT checkpoints (the GPU configs) are torch.distributed.checkpoint
    folders: complete once each one's ``.metadata``, written after all shards, exists."""
    folder = write_checkpoint(tmp_path, 5, SHARDED)
    for name in ("pytorch_model_fsdp_0", "optimizer_0"):
        (folder / name).mkdir()
        (folder / name / "__0_0.distcp").write_text("x")
        if name in metadata:
            (folder / name / ".metadata").write_text("x")
    assert is_complete(folder) is complete
