"""Teachers sharded as they load under FSDP2: every rank keeps only its shard of each teacher.

Every rank builds each teacher on the meta device (no storage), splits it with
``fully_shard`` (each decoder layer a group, the rest the root), and fills its shards from
the full state dict rank 0 alone reads into CPU memory, broadcast one tensor at a time
(accelerate's ``fsdp2_load_full_state_dict``, the student's own path under FSDP2 with
``fsdp_cpu_ram_efficient_loading``: each tensor goes to the device of its shard's mesh).
Teachers load one after another, so the peak is one full teacher in rank 0's CPU memory
plus the shards; an accelerator holds one full tensor at most, never a whole teacher. A teacher
never runs a backward pass, so every group reshards after its
forward (what the student keeps gathered for its backward, a teacher frees at once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

from rlvr.config import ModelConfig

log = logging.getLogger(__name__)


def empty_model(path: str, model: ModelConfig) -> Any:
    """The model of ``path`` on the meta device: shapes and dtypes, no storage."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr.models.loading import model_init_kwargs

    config = AutoConfig.from_pretrained(path, revision=model.revision, trust_remote_code=model.trust_remote_code)
    kwargs = model_init_kwargs(model)
    if kwargs.get("dtype") == "auto":  # from_config has no file to read "auto" from
        kwargs["dtype"] = getattr(config, "dtype", None) or torch.float32
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config, **kwargs)


def fsdp_kwargs(accelerator: Any) -> dict[str, Any]:
    """``fully_shard``'s settings from accelerate's FSDP plugin, as the student gets them."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, OffloadPolicy

    plugin = accelerator.state.fsdp_plugin
    mesh = getattr(accelerator, "torch_device_mesh", None)
    if mesh is not None:
        mesh = mesh[tuple(accelerator.parallelism_config.fsdp_dim_names)]
    return {
        "mesh": mesh,
        "mp_policy": plugin.mixed_precision_policy or MixedPrecisionPolicy(),
        "offload_policy": plugin.cpu_offload or OffloadPolicy(),
        "reshard_after_forward": True,  # no backward: nothing is worth keeping gathered
    }


def shard_frozen(model: Any, accelerator: Any) -> Any:
    """``fully_shard`` each decoder layer (``_no_split_modules``) and then the root (embeddings,
    final norm and LM head in one group, so tied embeddings share it)."""
    from torch.distributed.fsdp import fully_shard

    kwargs = fsdp_kwargs(accelerator)
    layer_names = set(getattr(model, "_no_split_modules", None) or ())
    for module in list(model.modules()):
        if module is not model and type(module).__name__ in layer_names:
            fully_shard(module, **kwargs)
    fully_shard(model, **kwargs)
    return model


def _broadcast_buffers(model: Any, device: torch.device, values: dict[str, torch.Tensor]) -> None:
    """Rank 0's buffers (rotary frequencies and the like, which no state dict holds) on every
    rank: built on the meta device, the model has only their shapes."""
    import torch.distributed as dist

    persistent = set(model.state_dict().keys())
    for name, buffer in list(model.named_buffers()):
        value = values[name].to(device) if values else torch.empty_like(buffer, device=device)
        dist.broadcast(value, src=0)
        owner_name, _, local = name.rpartition(".")
        owner = model.get_submodule(owner_name) if owner_name else model
        owner.register_buffer(local, value, persistent=name in persistent)


def load_sharded(path: str, model: ModelConfig, accelerator: Any, prepare: Callable[[Any], Any] | None = None) -> Any:
    """Teacher ``path``, sharded over the ranks as it loads.

    Every rank builds the same module on the meta device (so every rank's FSDP groups, tied
    embeddings included, match); rank 0 alone reads the weights. ``prepare(model)`` runs
    on every rank before sharding (a patch that reads only the config: the fused LM head)."""
    from accelerate.utils import fsdp2_load_full_state_dict
    from torch.distributed.fsdp import CPUOffloadPolicy

    from rlvr.models.loading import load_model

    built = empty_model(path, model)
    full: dict[str, torch.Tensor] = {}
    buffers: dict[str, torch.Tensor] = {}
    if accelerator.is_main_process:
        loaded = load_model(path, model)
        full, buffers = loaded.state_dict(), dict(loaded.named_buffers())
        del loaded  # its tensors live on in ``full`` until they are broadcast
    if prepare is not None:
        prepare(built)
    shard_frozen(built, accelerator)
    _broadcast_buffers(built, accelerator.device, buffers)
    offload = isinstance(accelerator.state.fsdp_plugin.cpu_offload, CPUOffloadPolicy)
    fsdp2_load_full_state_dict(accelerator, built, full, cpu_offload=offload)
    del full, buffers
    if hasattr(built, "tie_weights"):  # assigned tensors untie what the config ties
        built.tie_weights()
    return built


def held_elements(model: Any) -> dict[str, int]:
    """Parameter elements this rank holds (its shards) and the model's whole count."""
    from torch.distributed.tensor import DTensor

    here = total = 0
    for param in model.parameters():
        total += param.numel()
        here += param.to_local().numel() if isinstance(param, DTensor) else param.numel()
    return {"here": here, "total": total}
