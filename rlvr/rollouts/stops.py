"""Where TRL's on-policy trainers stop a completion: every id of ``stop_token_ids``.

TRL 1.16's ``GRPOTrainer`` and ``DistillationTrainer`` stop at the generation config's end
tokens and the tokenizer's (``self.eos_token_ids``, read once in ``__init__``): the
transformers path generates with ``self.generation_config`` built from them, the completion
mask cuts at them, and vLLM stops at the model folder's own end tokens. A base model
(Qwen3-4B-Base: ``<|endoftext|>``) names none of the token its ChatML turns end with
(``<|im_end|>``), so rollouts would run on into invented turns. ``stop_at_turn_end`` adds the
missing stops to all of those, vLLM's included (``stop_token_ids`` in its sampling settings).
"""

from __future__ import annotations

import logging
from typing import Any

from rlvr.models.chat_format import stop_token_ids
from rlvr.training import trl_seam

log = logging.getLogger(__name__)


def stop_at_turn_end(trainer: Any) -> list[int]:
    """Adds ``stop_token_ids``' ids the trainer lacks to its stops; returns those added."""
    generation_config = getattr(trainer.model, "generation_config", None)
    stops = stop_token_ids(trl_seam.tokenizer(trainer), generation_config)
    added = [i for i in stops if i not in trainer.eos_token_ids]
    if not added:
        return []
    trainer.eos_token_ids = [*trainer.eos_token_ids, *added]
    ends = list(trainer.eos_token_ids)
    if getattr(trainer, "generation_config", None) is not None:  # the transformers path
        trainer.generation_config.eos_token_id = ends
    kwargs = getattr(trainer, "generation_kwargs", None)
    if isinstance(kwargs, dict) and "eos_token_id" in kwargs:
        kwargs["eos_token_id"] = ends
    vllm = getattr(trainer, "vllm_generation", None)
    if vllm is not None:
        known = list(vllm.generation_kwargs.get("stop_token_ids") or [])
        vllm.generation_kwargs = {
            **vllm.generation_kwargs,
            "stop_token_ids": known + [i for i in ends if i not in known],
        }
    log.info("generation also stops at %s (the chat turn's end)", added)
    return added
