"""Distillation teachers: checked against the student, loaded once, scoring sampled tokens.

A teacher answers one question: the log-probability it gives each completion token of a batch
of (prompt, completion) rows. ``LocalTeacher`` holds a model beside the student (eval mode, no
gradients); ``ServerTeacher`` asks a vLLM server through TRL's client, for experts too large to
hold beside the student.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any, Protocol

import torch

from rlvr.config import ConfigError, ModelConfig, RunConfig

log = logging.getLogger(__name__)


class Teacher(Protocol):
    def token_logprobs(self, batch: Mapping[str, torch.Tensor], temperature: float) -> torch.Tensor:
        """(rows, completion length) log-probs of ``batch["completion_ids"]``; 0 at padding."""
        ...


def _sequence(batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    return ids, mask


def completion_logprobs(
    model: Any, batch: Mapping[str, torch.Tensor], temperature: float, keep_kwarg: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the completion tokens under ``model`` and the completion logits."""
    from trl.trainer.utils import selective_log_softmax

    ids, mask = _sequence(batch)
    width = batch["completion_ids"].size(1)
    extra = {"logits_to_keep": width + 1} if keep_kwarg else {}
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False, **extra).logits
    logits = logits[:, -width - 1 : -1, :] / temperature  # position t predicts token t + 1
    return selective_log_softmax(logits, batch["completion_ids"]), logits


def fuse_lm_head(model: Any, temperature: float) -> Any:
    """Patch ``model`` with TRL's fused LM head at ``temperature``: its log-probs (and
    entropies) come 4,096 tokens x 32,768 vocabulary columns at a time, never the whole
    completion x vocabulary logits (37 GiB per device for M2RL's MT-OPD batch)."""
    from trl.trainer.utils import add_fused_lm_head

    if getattr(model, "_rlvr_fused_temperature", None) is None:
        add_fused_lm_head(model, temperature=temperature, outputs=("log_probs", "entropy"))
        model._rlvr_fused_temperature = temperature
    return model


def completion_token_logprobs(
    model: Any, batch: Mapping[str, torch.Tensor], temperature: float
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log-probs, entropies) of the completion tokens, through the fused head when ``model``
    carries one at ``temperature`` (entropies then too), else from the whole logits."""
    if getattr(model, "_rlvr_fused_temperature", None) != temperature:
        keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        logprobs, logits = completion_logprobs(model, batch, temperature, keep)
        from trl.trainer.utils import entropy_from_logits

        return logprobs, entropy_from_logits(logits.detach())
    ids, mask = _sequence(batch)
    width = batch["completion_ids"].size(1)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-width] = -100  # only completion tokens are scored
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    # the head scores position t's prediction of token t + 1: the last ``width`` columns
    return out.log_probs[:, -width:], out.entropy[:, -width:].detach()


class LocalTeacher:
    """A teacher model in this process: eval mode, frozen, on the training device. Under FSDP2
    it is sharded over the ranks like the student, as it loads (``rlvr.distillation.sharding``),
    so every rank runs every teacher's forward; otherwise each device holds it whole."""

    def __init__(
        self,
        model: Any = None,
        name: str = "",
        temperature: float | None = None,
        *,
        path: str = "",
        model_config: ModelConfig | None = None,
    ) -> None:
        self.name, self.temperature = name or path, temperature
        self.path, self.model_config = path, model_config
        self.model = None if model is None else self._frozen(model)
        self.sharded = False
        self.elements: dict[str, int] = {}  # parameter elements on this rank, and in all

    @classmethod
    def from_folder(cls, path: str, model_config: ModelConfig, temperature: float | None = None) -> LocalTeacher:
        """A teacher that loads in ``prepare``, when the trainer knows how to shard it."""
        return cls(None, path, temperature, path=path, model_config=model_config)

    def _frozen(self, model: Any) -> Any:
        model.eval().requires_grad_(False)
        if self.temperature is not None:
            fuse_lm_head(model, self.temperature)
        return model

    def prepare(self, accelerator: Any) -> None:
        from rlvr.distillation.sharding import held_elements

        if getattr(accelerator, "is_fsdp2", False):
            self._shard(accelerator)
        else:
            model = self.model if self.model is not None else self._load()
            model = model.to(accelerator.device)
            self.model = accelerator.prepare_model(model, evaluation_mode=True)
        self.elements = held_elements(self.model)

    def _load(self) -> Any:
        from rlvr.models.loading import load_model

        return self._frozen(load_model(self.path, self.model_config))

    def _shard(self, accelerator: Any) -> None:
        """Loaded sharded (a teacher given by folder), or an already loaded model sharded."""
        from rlvr.distillation.sharding import held_elements, load_sharded, shard_frozen

        if self.model is None:
            model = load_sharded(self.path, self.model_config, accelerator, self._frozen)
            self.model = model.requires_grad_(False)
        elif not self.sharded:
            shard_frozen(self.model, accelerator)
        self.sharded = True
        counts = held_elements(self.model)
        log.info(
            "teacher %s sharded over %d ranks (FSDP2): %d of its %d parameter elements here",
            self.name,
            accelerator.num_processes,
            counts["here"],
            counts["total"],
        )

    @torch.no_grad()
    def token_logprobs(self, batch: Mapping[str, torch.Tensor], temperature: float) -> torch.Tensor:
        logprobs, _ = completion_token_logprobs(self.model, batch, temperature)
        return logprobs * batch["completion_mask"]


class ServerTeacher:
    """A teacher behind a vLLM server (``vllm serve <model> --logprobs-mode processed_logprobs
    --max-logprobs -1``), asked through TRL's ``VLLMClient.get_sequence_logprobs``."""

    def __init__(self, base_url: str, timeout_s: float = 60.0) -> None:
        from trl.generation.vllm_client import VLLMClient

        self.client = VLLMClient(base_url=base_url, connection_timeout=timeout_s)
        self.name = base_url

    def prepare(self, accelerator: Any) -> None:
        return None

    def token_logprobs(self, batch: Mapping[str, torch.Tensor], temperature: float) -> torch.Tensor:
        from trl.experimental.server_distillation.server_distillation_trainer import (
            build_teacher_request_inputs,
        )

        ids, mask = _sequence(batch)
        seqs, prompt_lens, _ = build_teacher_request_inputs(ids, mask, prompt_attention_mask=batch["prompt_mask"])
        result = self.client.get_sequence_logprobs(
            sequences=seqs, prompt_lengths=prompt_lens, top_logprobs=1, temperature=temperature
        )
        out = torch.zeros(batch["completion_ids"].shape, dtype=torch.float32)
        for row, values in enumerate(result["actual_logprobs"]):
            if values:
                out[row, : len(values)] = torch.tensor([v[0] for v in values])
        if not torch.isfinite(out).all():
            raise RuntimeError(f"teacher server {self.name} returned no log-prob for some tokens")
        return out.to(batch["completion_ids"].device) * batch["completion_mask"]


def check_tokenizers(run: RunConfig, student_path: str) -> None:
    """Every teacher shares the student's tokenizer (the token ids are scored as they are);
    a mismatch fails here, naming the domain, before any model is loaded."""
    from rlvr.models.loading import load_tokenizer

    vocab = load_tokenizer(student_path, run.model).get_vocab()
    for domain in sorted(run.domains):
        path = run.distill.teachers[domain]
        try:
            theirs = load_tokenizer(path, run.model).get_vocab()
        except (OSError, ValueError) as err:
            raise ConfigError(f"distill.teachers.{domain}={path!r}: no tokenizer ({err})") from None
        if theirs != vocab:
            raise ConfigError(
                f"distill.teachers.{domain}={path!r} has another tokenizer than the student "
                f"({len(theirs)} vs {len(vocab)} tokens, {len(set(theirs) ^ set(vocab))} differ): "
                "distillation scores the student's token ids, so the teacher must share them"
            )


def load_teachers(run: RunConfig) -> dict[str, Teacher]:
    """One teacher per selected domain; domains naming the same folder share one model. Local
    teachers load when the trainer prepares them (sharded as they load under FSDP2)."""
    d = run.distill
    if d.teacher_device == "server":
        return {name: ServerTeacher(d.teacher_servers[name]) for name in sorted(run.domains)}
    loaded: dict[str, LocalTeacher] = {}
    teachers: dict[str, Teacher] = {}
    for name in sorted(run.domains):
        path = d.teachers[name]
        if path not in loaded:
            loaded[path] = LocalTeacher.from_folder(path, run.model, temperature=d.temperature)
        teachers[name] = loaded[path]
    log.info("teachers: %s", {name: d.teachers[name] for name in teachers})
    return teachers
