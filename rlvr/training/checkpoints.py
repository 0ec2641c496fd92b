"""Resuming a training stage from its newest complete checkpoint (never a half-written one)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from rlvr.training import trl_seam

log = logging.getLogger(__name__)

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
    return bool(models) and all((d / ".metadata").exists() for d in models + optimizers if d.is_dir())


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


def resume_checkpoint(run, run_dir: Path) -> str | None:
    """The checkpoint under ``<run_dir>/checkpoints`` a stage continues from: with
    ``resume=true``, or in a job SLURM requeued; None to start at step 0."""
    from rlvr.runs.folders import requeue_count

    if requeue_count() and not run.resume:
        log.info("SLURM requeued this job (restart %d): resuming", requeue_count())
    elif not run.resume:
        return None

    ckpt = latest_complete_checkpoint(run_dir / "checkpoints")
    if ckpt is None:  # a first start under resume=true (as a study runs it) is not a problem
        report = log.warning if any((run_dir / "checkpoints").glob("checkpoint-*")) else log.info
        report("resume=true but no complete checkpoint in %s: starting from step 0", run_dir)
        return None
    log.info("resuming from %s", ckpt)
    return str(ckpt)


def train_from(trainer, checkpoint: str | None, save_every_min: float = 0.0) -> None:
    """``trainer.train`` from ``checkpoint``, except that a checkpoint already at ``max_steps``
    (a run killed between its last save and its final model) is loaded, not trained on: the
    Trainer would run one step past it whenever ``max_steps`` is not a whole number of epochs.

    While it trains, SLURM's announcement of the job's end saves the current step and ends the
    process for the requeue, and ``save_every_min`` minutes without a save save one
    (``rlvr.training.checkpoint_signals``)."""
    from transformers.trainer_callback import TrainerState

    from rlvr.training.checkpoint_signals import CheckpointOnSignal, exit_for_requeue

    max_steps = trainer.args.max_steps
    state = checkpoint and TrainerState.load_from_json(f"{checkpoint}/trainer_state.json")
    if not state or max_steps <= 0 or state.global_step < max_steps:
        ending = CheckpointOnSignal(save_every_min).install()
        trainer.add_callback(ending)
        try:
            trainer.train(resume_from_checkpoint=checkpoint)
        finally:
            ending.uninstall()
        if ending.stopped_early(max_steps):
            exit_for_requeue(trainer.state.global_step, ending.previous)
        return
    if trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled:
        # sharded weights load only into the wrapped model, which exists inside train()
        log.warning("%s holds the last step; sharded resume may train one more", checkpoint)
        trainer.train(resume_from_checkpoint=checkpoint)
        return
    log.info("%s holds the last step (%d): loading it, nothing left to train", checkpoint, max_steps)
    trl_seam.load_weights_from_checkpoint(trainer, checkpoint)
    trainer.state = state
