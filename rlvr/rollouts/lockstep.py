"""Sampling forwards in step across ranks whose weights are sharded: every rank runs as many.

Under FSDP each forward gathers the sharded weights from every rank, so the ranks must run the
same number of forwards, although their rows end at different steps and their episodes call
tools at different times. Before each forward the ranks agree (one all-reduce of a flag)
whether any of them still has one to run; a rank whose own sampling is over answers every
forward the others still run with a stand-in (one token, no cache), until none has any left.
This is what ``generate(synced_gpus=True)`` does for transformers' own loop; here it wraps the
model, so the single-turn sampler and the episode loop stay as they are. Ranks holding whole
weights (one process, DDP) need none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rlvr.rollouts import data_parallel


class Lockstep:
    """A model whose every call is matched by one on each other rank (``drain`` after use)."""

    gathers_weights = True  # the samplers keep autograd off without inference mode

    def __init__(self, model: Any, device: Any) -> None:
        self.model = model
        self.device = device
        self.forwards = 0  # this rank's own
        self.stand_ins = 0  # answering the others' after this rank was done

    def __getattr__(self, name: str) -> Any:  # config, parameters(), forward's signature ...
        return getattr(self.model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._any_rank_runs(True)
        self.forwards += 1
        return self.model(*args, **kwargs)

    def drain(self) -> None:
        """Answer the other ranks' remaining forwards with stand-ins until every rank is done."""
        import torch

        while self._any_rank_runs(False):
            self.stand_ins += 1
            self.model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=self.device), use_cache=False)

    def _any_rank_runs(self, mine: bool) -> bool:
        import torch
        import torch.distributed as dist

        flag = torch.tensor([1 if mine else 0], device=self.device)
        dist.all_reduce(flag)
        return bool(flag.item())


@contextmanager
def in_step(model: Any, accelerator: Any) -> Iterator[Any]:
    """The model to sample from: itself where each rank holds whole weights, else wrapped in
    ``Lockstep`` and drained on the way out (also when sampling raised, so that the other
    ranks finish their forwards and see the error at their next collective, not a hang)."""
    if accelerator.num_processes == 1 or data_parallel(accelerator):
        yield model
        return
    stepped = Lockstep(model, accelerator.device)
    try:
        yield stepped
    finally:
        stepped.drain()
