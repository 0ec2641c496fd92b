"""One-step-ahead generation: a copy of the policy samples the next batch on a worker thread.

While step ``s`` trains, the copy, holding the weights after ``s`` updates (policy version
``s``), samples the batch that step ``s + 1`` trains on, so generation overlaps the update and
every batch is at most one version stale. The trainer (``rlvr.training.grpo``) drives it: ``take`` the
batch it is about to train, ``sync`` the copy to the current weights, ``submit`` the next one.

Sampling is counter-based: each batch draws from its own ``torch.Generator`` seeded by (seed,
rank, the step it is drawn for), never from torch's global generator, which the training
thread uses meanwhile (the KV-cache loop is ``rlvr.evaluation.sampling``'s, shared with
evaluation). So a batch's completions depend on the weights, prompts and step alone,
and a pending batch saved with a checkpoint (``save``/``load``) resumes the run exactly.
Each completion keeps the sampling policy's log-probability of every token (temperature
applied, before top-p), the same quantity the trainer computes, so the loss can take the ratio
against the policy that actually sampled.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PromptIds = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Sampling:
    """How the copy samples: TRL's generation settings for the transformers path."""

    max_new_tokens: int
    temperature: float
    top_p: float
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    seed: int
    rank: int = 0
    autocast_dtype: str | None = None  # "bfloat16" when the trainer runs bf16


@dataclass(frozen=True)
class Rollout:
    """One generation batch: completions, their sampling log-probs and the version that drew them."""

    prompt_ids: PromptIds
    completion_ids: list[list[int]]
    logprobs: list[list[float]]
    version: int  # optimiser steps the sampling weights had taken
    step: int  # the optimiser step (0-based) it was drawn for: its seed


@dataclass
class LookaheadStats:
    staleness: list[int] = field(default_factory=list)
    wait_s: float = 0.0  # training thread blocked on the copy
    sample_s: float = 0.0  # the copy sampling (overlapped with training when ahead)

    def facts(self) -> dict[str, Any]:
        s = self.staleness
        return {
            "batches": len(s),
            "staleness_mean": sum(s) / len(s) if s else 0.0,
            "staleness_max": max(s, default=0),
            "wait_s": self.wait_s,
            "sample_s": self.sample_s,
        }


class Lookahead:
    """The generation copy, its worker thread and the one batch it may hold ahead."""

    def __init__(self, policy, sampling: Sampling) -> None:
        self.copy = copy.deepcopy(policy).eval().requires_grad_(False)
        self.sampling = sampling
        self.version = -1  # not synced yet: the trainer may load other weights before step 0
        self.stats = LookaheadStats()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlvr-lookahead")
        self._pending: Future | None = None
        self._names: list[str] | None = None

    # -- weights --------------------------------------------------------------------------
    def sync(self, live, version: int) -> None:
        """Copy the live model's trainable weights in (full tensors when FSDP shards them).
        Call with no batch in flight; every rank calls it at the same point."""
        import torch
        from torch.distributed.tensor import DTensor

        if version == self.version:
            return
        assert self._pending is None or self._pending.done(), "sync while the copy samples"
        params = dict(live.named_parameters())
        targets = dict(self.copy.named_parameters())
        if self._names is None:
            self._names = [n for n, p in params.items() if p.requires_grad]
            if missing := [n for n in self._names if n not in targets]:
                raise RuntimeError(
                    f"the generation copy lacks trained parameters {missing[:3]}: the live model "
                    "changed shape after the copy was taken; set trainer.async_generation=false"
                )
        with torch.no_grad():
            for name in self._names:
                source = params[name]
                value = source.full_tensor() if isinstance(source, DTensor) else source
                targets[name].copy_(value.detach())
        _wait_for_device(self.copy)
        self.version = version

    # -- batches --------------------------------------------------------------------------
    def submit(self, prompt_ids, step: int) -> None:
        """Start sampling the batch for ``step`` with the copy's current weights."""
        if self._pending is not None:
            raise RuntimeError("the lookahead already holds a batch; take it first")
        key, version = _key(prompt_ids), self.version
        self._pending = self._executor.submit(self._sample, key, version, step)

    def take(self, prompt_ids) -> Rollout | None:
        """The held batch when it is for these prompts (waiting for it), else None."""
        if self._pending is None:
            return None
        start = time.perf_counter()
        rollout = self._pending.result()
        self.stats.wait_s += time.perf_counter() - start
        self._pending = None
        if rollout.prompt_ids != _key(prompt_ids):
            log.warning("lookahead: the held batch is not the one asked for; sampling it now")
            return None
        return rollout

    def sample_now(self, prompt_ids, step: int) -> Rollout:
        self.submit(prompt_ids, step)
        rollout = self.take(prompt_ids)
        assert rollout is not None
        return rollout

    def record(self, rollout: Rollout, trained_at: int) -> int:
        staleness = trained_at - rollout.version
        self.stats.staleness.append(staleness)
        return staleness

    def _sample(self, key: PromptIds, version: int, step: int) -> Rollout:
        start = time.perf_counter()
        ids, logprobs = sample(self.copy, key, self.sampling, _seed(self.sampling, step))
        self.stats.sample_s += time.perf_counter() - start
        return Rollout(key, ids, logprobs, version, step)

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Write the held batch (waiting for it) beside a checkpoint; it stays held."""
        if self._pending is None:
            return
        rollout: Rollout = self._pending.result()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"lookahead-rank{self.sampling.rank}.json"
        path.write_text(json.dumps(asdict(rollout)))

    def load(self, folder: Path) -> None:
        """Hold the batch a checkpoint saved (none: the run starts by sampling in step)."""
        path = folder / f"lookahead-rank{self.sampling.rank}.json"
        if not path.is_file():
            return
        data = json.loads(path.read_text())
        data["prompt_ids"] = _key(data["prompt_ids"])
        self._pending = Future()
        self._pending.set_result(Rollout(**data))

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._pending = None


def sample(model, prompt_ids, sampling: Sampling, seed: int) -> tuple[list, list]:
    """One completion per prompt (ids up to and including the first end token) and the
    log-probability of each sampled token, drawn from a generator seeded by ``seed``."""
    import contextlib

    import torch

    from rlvr.evaluation.sampling import Sampler
    from rlvr.rollouts.single_turn import sample_rows

    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    sampler = Sampler(
        max_new_tokens=sampling.max_new_tokens,
        eos_token_ids=sampling.eos_token_ids,
        pad_token_id=sampling.pad_token_id,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
    )
    cast = (
        torch.autocast(device.type, dtype=getattr(torch, sampling.autocast_dtype))
        if sampling.autocast_dtype
        else contextlib.nullcontext()
    )
    with cast, _stream(device):
        ids, logprobs = sample_rows(model, prompt_ids, sampler, generator, logprobs=True)
        _wait_for_device(model)
    assert logprobs is not None
    return ids, logprobs


def _key(prompt_ids) -> PromptIds:
    return tuple(tuple(int(t) for t in p) for p in prompt_ids)


def _seed(sampling: Sampling, step: int) -> int:
    text = f"{sampling.seed}:{sampling.rank}:{step}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def _stream(device):
    """A side CUDA stream for the worker thread (so sampling overlaps the update); else none."""
    import contextlib

    import torch

    if device.type == "cuda":
        return torch.cuda.stream(torch.cuda.Stream(device=device))
    return contextlib.nullcontext()


def _wait_for_device(model) -> None:
    import torch

    device = next(model.parameters()).device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
