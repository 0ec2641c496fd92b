"""Batched multi-turn sampling: episodes keep their KV cache across turns while tools answer.

All live episodes decode together, one token per step. When a turn ends (an end token, or
the episode's token budget), a handler gets every turn that ended in that step at once and
answers each with suffix ids to append (the tool results and the next assistant header) or
``None`` to end the episode. The suffix is fed on top of the episode's cache, never by
re-encoding the conversation.

Feeding suffixes, dropping ended episodes and admitting queued ones copy the batch cache
(``rlvr.evaluation.kv_rows``), so they are gathered into rebuilds: episodes waiting for their
tool results sit a few steps out (until 1/8 of the rows wait, or one has waited 8 steps),
queued ones join once 1/8 of the rows are free, and ended ones keep their row until a quarter
of the rows have ended or a rebuild comes anyway.
A rebuild runs the waiting rows' suffixes and the new prompts as forwards of their own
(samples of one prompt prefilled once) and joins everything into one batch again.

Where the model allows it (``rlvr.evaluation.shared_prefix``), each prompt's keys and values
are held once for all its episodes and the batch cache holds only what follows the prompts:
decoding reads a prompt once per step for all its samples, and rebuilds copy only the
episodes' own ids (the embedded study's agent prompts are about 150 ids, its episodes up to 192).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from rlvr.evaluation.kv_rows import Rows, admit, decode, extend, join, select
from rlvr.evaluation.sampling import draw, no_autograd, nucleus
from rlvr.evaluation.shared_prefix import can_share, prefix_attention

log = logging.getLogger(__name__)

WAITING_SHARE = 8  # tool results are fed once 1/8 of the busy rows wait for them ...
MAX_WAIT = 8  # ... or one has waited this many steps (each feed copies the batch cache)
DONE_SHARE = 4  # ended episodes leave the batch once they are a quarter of its rows
ADMIT_SHARE = 8  # queued episodes join once an eighth of the rows are free

# (episode index, the turn's ids) for every turn that ended in one step -> per turn, the ids to
# append before the next turn, or None when the episode ends there
TurnHandler = Callable[[list[tuple[int, list[int]]]], list[list[int] | None]]


@dataclass(frozen=True)
class TurnSampling:
    """How turns are sampled, and how long an episode may run."""

    budget: int  # completion tokens per episode: the model's turns and the appended suffixes
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    temperature: float = 1.0
    top_p: float = 1.0
    greedy: bool = False
    batch_size: int = 64  # episodes decoded together; the rest wait for a free slot
    share_prompts: bool = True  # prompts cached once each where the model allows it


@dataclass
class Trace:
    """One episode's ids: its prompt, then turns and suffixes (``mask`` 0 on suffix ids)."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turn_start: int = 0  # where the current turn began in ``completion_ids``
    cached: int = 0  # leading prompt+completion ids already in the KV cache

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids

    @property
    def uncached(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids) - self.cached


def sample_episodes(
    model: Any,
    prompts: Sequence[Sequence[int]],
    on_turns: TurnHandler,
    sampling: TurnSampling,
    generator: Any = None,
) -> list[Trace]:
    """Run every prompt as an episode until its handler ends it or its budget is spent.

    ``generator`` (a ``torch.Generator``) draws the samples; None uses torch's global one."""
    import torch

    traces = [Trace(list(p)) for p in prompts]
    batch = _Batch(traces, list(range(len(traces))) if sampling.budget > 0 else [])
    batch.shared = sampling.share_prompts and can_share(model)
    with no_autograd(model), prefix_attention(model) if batch.shared else nullcontext():
        while batch.queue or len(batch.done) < len(batch.live.ids):
            batch.step += 1
            rows, logits = batch.decode(model)
            if batch.due(sampling.batch_size):
                more, more_logits = batch.rebuild(model, sampling.batch_size)
                rows, logits = rows + more, [*logits, *more_logits]
            tokens = _sample(torch.cat(logits), sampling, generator).tolist()
            ended = _append(traces, rows, tokens, sampling)
            for i, suffix in _end_turns(traces, ended, on_turns, sampling):
                if suffix is None:
                    batch.done.add(i)
                elif suffix:  # fed at the next rebuild; an empty one just continues
                    batch.waiting[i] = batch.step
    return traces


@dataclass
class _Batch:
    """The episodes in the batch and those queued; which of them wait for a rebuild."""

    traces: list[Trace]
    queue: list[int]
    live: Rows = field(default_factory=lambda: Rows([]))
    waiting: dict[int, int] = field(default_factory=dict)  # tool results to feed, since step
    done: set[int] = field(default_factory=set)  # ended, still holding a row until a rebuild
    step: int = 0
    shared: bool = False  # prompts held once each (rlvr.evaluation.shared_prefix)
    named: int = 0  # prompts admitted so far (their names in the shared prefix)

    def decode(self, model: Any) -> tuple[list[int], list[Any]]:
        """One step for the rows mid-turn; the others sit it out."""
        active = [i not in self.waiting and i not in self.done for i in self.live.ids]
        if not any(active):
            return [], []
        traces = [self.traces[i] for i in self.live.ids]
        tokens = [t.completion_ids[-1] if a else 0 for t, a in zip(traces, active, strict=True)]
        cached = [self._own(t)[1] for t in traces]
        logits = decode(model, self.live, tokens, cached, active)
        rows = [i for i, a in zip(self.live.ids, active, strict=True) if a]
        for i in rows:
            self.traces[i].cached += 1
        index = [n for n, a in enumerate(active) if a]
        return rows, [logits if len(index) == len(active) else logits[index]]

    def due(self, batch_size: int) -> bool:
        """Rebuild when episodes can join, tool results pile up or wait long, or rows idle."""
        busy = len(self.live.ids) - len(self.done)
        if self.queue and batch_size - busy >= min(len(self.queue), batch_size // ADMIT_SHARE + 1):
            return True
        if self.waiting and (
            len(self.waiting) * WAITING_SHARE >= busy
            or self.step - min(self.waiting.values()) >= MAX_WAIT
            or len(self.waiting) == busy
        ):
            return True
        return len(self.done) * DONE_SHARE >= max(1, len(self.live.ids))

    def rebuild(self, model: Any, batch_size: int) -> tuple[list[int], list[Any]]:
        """Feed the waiting rows their tool results and prefill the queued episodes that fit,
        each as a forward of its own; drop ended rows; join everything into one batch."""
        import torch

        decoding = [i for i in self.live.ids if i not in self.waiting and i not in self.done]
        room = max(0, batch_size - len(decoding) - len(self.waiting))
        fresh, self.queue = self.queue[:room], self.queue[room:]
        parts: list[tuple[Rows, list[int] | None]] = [(self.live, decoding)]
        rows, logits = [], []
        for part in (select(self.live, list(self.waiting)), Rows(fresh)):
            if not part.ids:
                continue
            traces = [self.traces[i] for i in part.ids]
            if self.shared and part.cache is None:  # new episodes: their prompts, once each
                part, part_logits = admit(
                    model, part.ids, [t.prompt_ids for t in traces], self.live.prefix, self.named
                )
                self.named += len(traces)
            else:
                own = [self._own(t) for t in traces]
                part, part_logits = extend(model, part, *map(list, zip(*own, strict=True)))
            for t in traces:
                t.cached = len(t.prompt_ids) + len(t.completion_ids)
            parts.append((part, None))
            rows += part.ids
            logits.append(part_logits)
        self.live = join(parts) if len(parts) > 1 or decoding else Rows([])
        if self.live.prefix is not None and self.live.ids:  # prompts no row continues leave
            names = torch.tensor(self.live.prompts, device=self.live.prefix.names.device)
            self.live.prefix.select(names, drop=True)
        self.waiting, self.done = {}, set()
        return rows, logits

    def _own(self, trace: Trace) -> tuple[list[int], int]:
        """What the cache rows hold of an episode: its ids and how many are cached (those
        after its prompt when prompts are shared)."""
        if not self.shared:
            return trace.ids, trace.cached
        return trace.completion_ids, trace.cached - len(trace.prompt_ids)


def _append(traces: list[Trace], rows: list[int], tokens: list[int], sampling: TurnSampling) -> list[int]:
    """Add each row's sampled token; the rows whose turn ended with it."""
    ended = []
    for i, token in zip(rows, tokens, strict=True):
        trace = traces[i]
        trace.completion_ids.append(token)
        trace.mask.append(1)
        if token in sampling.eos_token_ids or len(trace.completion_ids) >= sampling.budget:
            ended.append(i)
    return ended


def _end_turns(
    traces: list[Trace], ended: list[int], on_turns: TurnHandler, sampling: TurnSampling
) -> list[tuple[int, list[int] | None]]:
    """Hand the ended turns over together and append the suffixes; per ended turn, the
    suffix to feed next, or None when the episode is over."""
    if not ended:
        return []
    turns = [(i, traces[i].completion_ids[traces[i].turn_start :]) for i in ended]
    outcome = []
    for i, suffix in zip(ended, on_turns(turns), strict=True):
        trace = traces[i]
        if suffix is not None:
            if len(trace.completion_ids) + len(suffix) > sampling.budget:
                raise ValueError("a turn handler appended ids past the episode's token budget")
            trace.completion_ids += suffix
            trace.mask += [0] * len(suffix)
            trace.turn_start = len(trace.completion_ids)
            if len(trace.completion_ids) >= sampling.budget:
                suffix = None  # nothing left to generate after the tool results
        outcome.append((i, suffix))
    return outcome


def _sample(logits: Any, sampling: TurnSampling, generator: Any) -> Any:
    """Greedy, or temperature then top-p, drawn as single-turn evaluation draws them."""
    import torch

    if sampling.greedy:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    return draw(nucleus(probs, sampling.top_p), generator)
