"""Full model weights into a folder from any trainer: one process, data parallel, or FSDP.

Under FSDP the HF ``Trainer.save_model`` writes weights only for ``FULL_STATE_DICT``; with
``SHARDED_STATE_DICT`` (the GPU configs' choice, for fast sharded checkpoints) ``final/``
would hold no model for merge or evaluation. So the full state dict is gathered here on
every rank (a collective) and written by rank 0 as safetensors. LoRA runs are merged into
their base first, on a CPU copy when the live model is sharded.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rlvr.runs.folders import barrier, is_main_process

log = logging.getLogger(__name__)


def save_full_model(trainer, folder: Path, *, lora: bool) -> None:
    """``folder`` gets config and full weights (tokenizer: the caller's), on rank 0."""
    if getattr(trainer, "is_fsdp_enabled", False):
        _save_sharded(trainer, folder, lora=lora)
    elif lora:
        if is_main_process():
            merged = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()
            merged.save_pretrained(str(folder))
    else:
        trainer.save_model(str(folder))
    barrier()


def _save_sharded(trainer, folder: Path, *, lora: bool) -> None:
    accelerator = trainer.accelerator
    state = accelerator.get_state_dict(trainer.model)  # every rank takes part; rank 0 gets it
    if not is_main_process():
        return
    model = accelerator.unwrap_model(trainer.model)
    state = {k: v for k, v in state.items() if k not in _tied_aliases(model)}
    if lora:
        model = _merged_copy(model, state)
        state = None
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder), state_dict=state)
    log.info("gathered the sharded model into %s", folder)


def _tied_aliases(model) -> set[str]:
    """Names of parameters that are the same tensor as an earlier one (tied embeddings).
    The gathered state dict holds a separate copy under each name, so ``save_pretrained``
    cannot see the tie by storage and would write both."""
    first: dict[int, str] = {}
    aliases: set[str] = set()
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in first:
            aliases.add(name)
        else:
            first[id(param)] = name
    return aliases


def _merged_copy(peft_model, state: dict):
    """The LoRA model rebuilt unsharded on CPU from its gathered weights, then merged."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    base_path = peft_model.peft_config["default"].base_model_name_or_path
    base = AutoModelForCausalLM.from_pretrained(base_path, dtype=peft_model.dtype)
    copy = get_peft_model(base, peft_model.peft_config["default"])
    missing, unexpected = copy.load_state_dict(state, strict=False)
    if unexpected or any("lora_" in k for k in missing):
        raise RuntimeError(
            f"the gathered LoRA weights do not fit a fresh copy of {base_path} "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]}): report this with the run's config"
        )
    return copy.merge_and_unload()
