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

from rlvr.config import ConfigError, RunConfig

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
    """A teacher model in this process: eval mode, frozen, on the training device; under FSDP
    sharded over the ranks like the student (so every rank runs every teacher's forward)."""

    def __init__(self, model: Any, name: str = "", temperature: float | None = None) -> None:
        self.model = model.eval().requires_grad_(False)
        if temperature is not None:
            fuse_lm_head(self.model, temperature)
        self.name = name
        self.sharded = False

    def prepare(self, accelerator: Any) -> None:
        if getattr(accelerator, "is_fsdp2", False):
            from trl.models import prepare_fsdp

            self.model, self.sharded = prepare_fsdp(self.model, accelerator), True
            log.info(
                "teacher %s sharded over %d ranks (FSDP2)", self.name, accelerator.num_processes
            )
        else:
            self.model = accelerator.prepare_model(self.model, evaluation_mode=True)

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
        seqs, prompt_lens, _ = build_teacher_request_inputs(
            ids, mask, prompt_attention_mask=batch["prompt_mask"]
        )
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


def load_teachers(run: RunConfig, device: Any) -> dict[str, Teacher]:
    """One teacher per selected domain; domains naming the same folder share one model."""
    from rlvr.models.loading import load_model

    d = run.distill
    if d.teacher_device == "server":
        return {name: ServerTeacher(d.teacher_servers[name]) for name in sorted(run.domains)}
    loaded: dict[str, LocalTeacher] = {}
    teachers: dict[str, Teacher] = {}
    for name in sorted(run.domains):
        path = d.teachers[name]
        if path not in loaded:
            model = load_model(path, run.model).to(device)
            loaded[path] = LocalTeacher(model, path, temperature=d.temperature)
        teachers[name] = loaded[path]
    log.info("teachers: %s", {name: d.teachers[name] for name in teachers})
    return teachers


def _completion_mask(completion_ids: torch.Tensor, eos_ids: set[int]) -> torch.Tensor:
    """1 up to and including each row's first end token, 0 after it."""
    is_end = torch.zeros_like(completion_ids, dtype=torch.bool)
    for eos in eos_ids:
        is_end |= completion_ids == eos
    ended_before = (is_end.cumsum(dim=1) - is_end.long()) > 0
    return (~ended_before).long()


@torch.no_grad()
def heldout_kl(
    student: Any,
    teachers: Mapping[str, Any],
    tokenizer: Any,
    rows: list[dict],
    *,
    samples: int = 4,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 64,
    chat: Any = None,
) -> dict[str, dict[str, float]]:
    """Per domain, the exact per-token KL(student || teacher of the domain) over the full
    next-token distribution, averaged over completions the student samples for ``rows``.

    ``teachers`` maps domains to models (local teachers only: a server returns no full
    distribution). Returns ``{domain: {"kl", "tokens", "prompts"}}``. Prompts render with
    ``chat`` (a ``ChatFormat``: the training run's template options).
    """
    from rlvr.models.chat_format import ChatFormat, stop_token_ids

    chat = chat or ChatFormat()
    eos = set(stop_token_ids(tokenizer, student.generation_config))
    totals: dict[str, list[float]] = {}
    torch.manual_seed(seed)
    device = next(student.parameters()).device
    student.eval()
    per_batch = max(1, batch_size // samples)
    for start in range(0, len(rows), per_batch):
        part = rows[start : start + per_batch]
        enc = tokenizer(
            chat.texts(tokenizer, [r["prompt"] for r in part]),
            return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False,
        ).to(device)  # fmt: skip
        out = student.generate(
            **enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
            num_return_sequences=samples, max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=sorted(eos),
        )  # fmt: skip
        width = enc["input_ids"].shape[1]
        completion = out[:, width:]
        batch = {
            "prompt_ids": enc["input_ids"].repeat_interleave(samples, dim=0),
            "prompt_mask": enc["attention_mask"].repeat_interleave(samples, dim=0),
            "completion_ids": completion,
            "completion_mask": _completion_mask(completion, eos),
        }
        _, s_logits = completion_logprobs(student, batch, temperature, keep_kwarg=False)
        s_logp = torch.log_softmax(s_logits.float(), dim=-1)
        for domain in dict.fromkeys(r["domain"] for r in part):
            index = torch.tensor(
                [j * samples + s for j, r in enumerate(part) if r["domain"] == domain
                 for s in range(samples)], device=device,
            )  # fmt: skip
            sub = {k: v[index] for k, v in batch.items()}
            _, t_logits = completion_logprobs(teachers[domain], sub, temperature, False)
            t_logp = torch.log_softmax(t_logits.float(), dim=-1)
            mine = s_logp[index]
            kl = (mine.exp() * (mine - t_logp)).sum(-1) * sub["completion_mask"]
            acc = totals.setdefault(domain, [0.0, 0.0, 0.0])
            acc[0] += float(kl.sum())
            acc[1] += float(sub["completion_mask"].sum())
            acc[2] += len(index) // samples
    return {
        d: {"kl": s / max(n, 1.0), "tokens": n, "prompts": int(p)}
        for d, (s, n, p) in sorted(totals.items())
    }
