"""TRL's ``SFTTrainer`` with its loss over length-sorted chunks (``rlvr.lean_forward.sft``)."""

from __future__ import annotations

import logging
from typing import Any

from trl import SFTTrainer

from rlvr.lean_forward.sft import chunked_sft_loss

log = logging.getLogger(__name__)


class LeanSFTTrainer(SFTTrainer):
    """``SFTTrainer`` whose ``compute_loss`` runs the batch in length-sorted chunks cut to their
    rows' columns (``trim_padding``), where TRL's loss is its plain one: nll or dft through the
    fused LM head, one process, no custom loss, label smoothing or auxiliary loss. Logs what
    TRL logs (entropy, token accuracy, tokens)."""

    def __init__(self, *args: Any, trim_padding: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        why = None if trim_padding else "sft.trim_padding=false"
        if why is None:
            why = self._untrimmable()
            if why:
                log.info("sft.trim_padding is off: %s", why)
        self.trim_padding = why is None
        self.chunks_run = 0

    def _untrimmable(self) -> str | None:
        if self.accelerator.num_processes > 1:
            return "several processes (their chunk counts would differ)"
        if self.compute_loss_func is not None or self.label_smoother is not None:
            return "a custom loss or label smoothing"
        if self.aux_loss_enabled or self.args.loss_type not in ("nll", "dft"):
            return f"loss_type {self.args.loss_type!r} or an auxiliary loss"
        if self.padding_free:
            return "padding-free batches have no padding"
        return None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        chunked = None
        if self.trim_padding and not return_outputs and "attention_mask" in inputs:
            inputs["use_cache"] = False
            chunked = chunked_sft_loss(model, inputs, num_items_in_batch, dft=self.args.loss_type == "dft")
        if chunked is None:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        self.chunks_run += chunked.chunks
        loss = chunked.loss
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * self.accelerator.num_processes  # as TRL does (one process here)
        mode = "train" if self.model.training else "eval"
        valid = chunked.label_tokens
        metrics = self._metrics[mode]
        metrics["entropy"].append((chunked.entropy_sum / valid).item() if valid > 0 else 0.0)
        metrics["mean_token_accuracy"].append((chunked.correct / valid).item() if valid > 0 else 0.0)
        if mode == "train":
            self._total_train_tokens += int(inputs["attention_mask"].sum())
        metrics["num_tokens"] = [self._total_train_tokens]
        return loss
