"""Full model weights into a folder from any trainer: one process, data parallel, or FSDP.

Under FSDP the HF ``Trainer.save_model`` writes weights only for ``FULL_STATE_DICT``; with
``SHARDED_STATE_DICT`` (the GPU configs' choice, for fast sharded checkpoints) ``final/``
would hold no model for merge or evaluation. So the full state dict is gathered here on
every rank (a collective) and written by rank 0 as safetensors. LoRA runs are merged into
their base first, on a CPU copy when the live model is sharded.

Weights are written in the dtype training ran in (``trainer.save_dtype: auto``): bf16 or fp16
when the trainer ran mixed precision in it (FSDP keeps float32 master weights, which would
double a final model's size for nothing), else as the model was loaded (``model.dtype``); a
named dtype overrides. ``config.json`` records the dtype the weights have.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rlvr.runs.folders import barrier, is_main_process

log = logging.getLogger(__name__)


SAVE_DTYPES = ("auto", "float32", "bfloat16", "float16")


def save_dtype(setting: str, trainer) -> str | None:
    """The dtype to write (None: the weights' own): ``setting`` unless ``auto``, which is the
    trainer's mixed precision (bf16 / fp16) where it has one."""
    if setting not in SAVE_DTYPES:
        raise ValueError(f"save dtype {setting!r}: choose one of {', '.join(SAVE_DTYPES)}")
    if setting != "auto":
        return setting
    args = getattr(trainer, "args", None)
    precision = getattr(getattr(trainer, "accelerator", None), "mixed_precision", "no")
    if getattr(args, "bf16", False) or precision == "bf16":
        return "bfloat16"
    if getattr(args, "fp16", False) or precision == "fp16":
        return "float16"
    return None


def save_full_model(trainer, folder: Path, *, lora: bool, dtype: str = "auto") -> None:
    """``folder`` gets config and full weights (tokenizer: the caller's), on rank 0, in
    ``save_dtype(dtype, trainer)``."""
    target = save_dtype(dtype, trainer)
    if getattr(trainer, "is_fsdp_enabled", False):
        _save_sharded(trainer, folder, lora=lora, target=target)
    elif lora or _differs(trainer.model, target):
        if is_main_process():
            model = trainer.accelerator.unwrap_model(trainer.model)
            _write(model.merge_and_unload() if lora else model, folder, None, target)
    else:
        trainer.save_model(str(folder))
    barrier()


def _save_sharded(trainer, folder: Path, *, lora: bool, target: str | None) -> None:
    accelerator = trainer.accelerator
    state = accelerator.get_state_dict(trainer.model)  # every rank takes part; rank 0 gets it
    if not is_main_process():
        return
    model = accelerator.unwrap_model(trainer.model)
    state = {k: v for k, v in state.items() if k not in _tied_aliases(model)}
    if lora:
        model = _merged_copy(model, state)
        state = None
    _write(model, folder, state, target)
    log.info("gathered the sharded model into %s", folder)


def _differs(model, target: str | None) -> bool:
    return target is not None and str(getattr(model, "dtype", "")) != f"torch.{target}"


def _write(model, folder: Path, state: dict | None, target: str | None) -> None:
    """``model.save_pretrained`` with its floating-point weights cast to ``target``."""
    folder.mkdir(parents=True, exist_ok=True)
    if target is not None:
        import torch

        state = model.state_dict() if state is None else state
        aliases = _tied_aliases(model)  # casting copies, so ties are no longer shared storage
        dtype = getattr(torch, target)
        for name in list(state):  # one tensor at a time: the float32 copy is freed as we go
            value = state.pop(name)
            if name not in aliases:
                state[name] = value.to(dtype) if value.is_floating_point() else value
    model.save_pretrained(str(folder), state_dict=state)
    if target is not None:
        _record_dtype(folder, target)


def _record_dtype(folder: Path, dtype: str) -> None:
    """``save_pretrained`` writes the live model's dtype into config.json; say the saved one."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["dtype"] = dtype
    if "torch_dtype" in config:
        config["torch_dtype"] = dtype
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


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
