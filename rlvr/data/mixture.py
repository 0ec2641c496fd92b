"""Domain mixture sampler for GRPO: natural, weighted, scheduled or adaptive quotas; resumable.

The index stream keeps the contract of TRL's ``RepeatSampler``: batches of ``batch_size``
distinct prompts; each batch is repeated ``repeat_count`` times (several updates per
generation batch) and inside it every prompt index is repeated ``mini_repeat_count``
(``num_generations``) times consecutively. Every rank builds the same sampler with the same
seed, so every rank sees the same stream and Accelerate shards it.

Randomness is counter-based: each permutation is drawn from ``random.Random`` seeded by
(seed, stream, epoch), so the stream is a pure function of the seed and the position, and the
saved state (position, schedule step and per-domain counters) resumes it exactly on any machine.
A ``MixtureSchedule`` (``rlvr.data.schedule``) makes the weights a function of the training step:
batch ``b`` starts at step ``b * steps_per_batch`` and takes the schedule's shares there.
``AdaptiveWeights`` (``rlvr.data.adaptive``) makes them a function of earlier batches' learning
signals, which the trainer reports through ``observe``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.data.adaptive import AdaptiveWeights
from rlvr.data.schedule import MixtureSchedule

log = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("natural", "weighted", "adaptive")
STATE_VERSION = 2  # 2: the schedule step joined the cursor (version 1 loads when unscheduled)


def apportion(weights: Sequence[float], batch_size: int, deficits: Sequence[float]) -> list[int]:
    """Seats per domain for one batch: floor(B*w) each, the spare seats to the largest
    remainder plus the carried deficit. Each quota is floor(B*w) or that plus one, so it is
    within one prompt of B*w, and the deficit term keeps long-run shares exact (cumulative
    counts stay within two prompts of target; about 1.2 in a random search of weights). A
    domain whose weight is 0 (paused by a schedule) gets no spare seat whatever it is owed."""
    targets = [batch_size * w for w in weights]
    quotas = [math.floor(t + 1e-9) for t in targets]
    spare = batch_size - sum(quotas)
    priority = [d + t - q for d, t, q in zip(deficits, targets, quotas, strict=True)]
    order = sorted(range(len(weights)), key=lambda i: (weights[i] <= 0, -priority[i], i))
    for i in order[:spare]:
        quotas[i] += 1
    return quotas


@dataclass
class _Cursor:
    """Position of the stream: batches done, the training step the next batch starts at,
    prompts drawn per domain, deficits."""

    batch: int = 0
    drawn: list[int] = field(default_factory=list)
    deficits: list[float] = field(default_factory=list)
    step: int = 0


class MixtureSampler:
    """Index sampler over a multi-domain dataset; a drop-in for TRL's ``RepeatSampler``.

    ``domains[i]`` is the domain of dataset row ``i``. ``mode="natural"`` shuffles all rows
    together (shares follow dataset sizes); ``mode="weighted"`` fills each batch with exact
    per-domain quotas from ``weights`` (or from ``schedule`` at each batch's training step,
    ``steps_per_batch`` optimiser steps per batch) and cycles each domain's rows in a reshuffled
    order per epoch. One ``__iter__`` yields ``len(self)`` indices (``num_batches`` batches, by
    default ``len(domains) // batch_size`` as TRL) and continues where the last one stopped.

    Resume one of two ways, never both: ``load_state_dict`` a saved ``state_dict`` (and keep
    the Trainer from skipping batches itself, ``ignore_data_skip=True``), or build a fresh
    sampler and let the Trainer skip: ``set_epoch`` rewinds to the pass start it expects.
    The DataLoader may prefetch, so ``state_dict`` can lead the optimiser by a batch or two;
    ``seek(batches_done * batch_size * mini_repeat_count * repeat_count)`` is exact.
    """

    def __init__(
        self,
        domains: Sequence[str],
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        *,
        mode: str = "natural",
        weights: Mapping[str, float] | None = None,
        seed: int = 0,
        num_batches: int | None = None,
        schedule: MixtureSchedule | None = None,
        steps_per_batch: int = 1,
        adaptive: AdaptiveWeights | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mixture mode {mode!r}; valid modes: {', '.join(MODES)}")
        if min(mini_repeat_count, batch_size, repeat_count, steps_per_batch) < 1:
            raise ValueError("mini_repeat_count, batch_size, repeat_count and steps_per_batch must be >= 1")
        if schedule is not None and (mode != "weighted" or weights):
            raise ValueError("a mixture schedule needs mode 'weighted' and no fixed weights")
        if (mode == "adaptive") != (adaptive is not None) or (adaptive and (weights or schedule)):
            raise ValueError("mode 'adaptive' takes its weights from ``adaptive`` alone")
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.mode = mode
        self.seed = seed
        self.schedule = schedule
        self.steps_per_batch = steps_per_batch
        self.adaptive = adaptive
        self.num_samples = len(domains)
        self.num_batches = self.num_samples // batch_size if num_batches is None else num_batches
        if self.num_batches < 1:
            raise ValueError(f"{self.num_samples} rows cannot fill one batch of {batch_size} prompts")
        if adaptive is not None:
            weights = dict(zip(adaptive.domains, adaptive.initial, strict=True))
        self.domain_names, self.weights, self._pools = _pools(domains, mode, weights, schedule)
        if adaptive is not None and self.domain_names != sorted(adaptive.domains):
            raise ValueError(f"adaptive mixture domains {adaptive.domains} differ from the rows' {self.domain_names}")
        self._perm_cache: dict[tuple[int, int], list[int]] = {}
        # most prompts one batch takes from a pool; natural batches never straddle epochs
        peaks = self._scheduled_shares(None) if schedule else self.weights
        if adaptive is not None:  # any domain may take all seats but the others' floors
            peaks = [1.0 - (len(peaks) - 1) * adaptive.settings.floor] * len(peaks)
        self._max_quota = [0 if mode == "natural" else math.ceil(batch_size * w - 1e-9) for w in peaks]
        self._cursor = _Cursor()
        self._reset_cursor()
        self._offset = 0  # indices of the current batch already yielded

    # -- the TRL sampler contract ---------------------------------------------------------
    def __len__(self) -> int:
        return self.num_batches * self._batch_span

    def __iter__(self) -> Iterator[int]:
        end = (self._cursor.batch // self.num_batches + 1) * self.num_batches
        while self._cursor.batch < end:
            stream = self._expand(self._batch_indices(self._cursor.batch))
            while self._offset < len(stream):
                self._offset += 1
                yield stream[self._offset - 1]
            self._step()

    def set_epoch(self, epoch: int) -> None:
        """Jump to the start of pass ``epoch`` unless already inside it (Trainer calls this)."""
        if self._cursor.batch // self.num_batches != epoch:
            self.seek(epoch * len(self))

    # -- position and resume --------------------------------------------------------------
    @property
    def position(self) -> int:
        """Indices yielded since the start of the stream."""
        return self._cursor.batch * self._batch_span + self._offset

    def seek(self, position: int) -> None:
        """Move to ``position`` indices into the stream (replays the cheap quota arithmetic)."""
        batch, offset = divmod(position, self._batch_span)
        if batch < self._cursor.batch:
            self._reset_cursor()
        while self._cursor.batch < batch:
            self._step()
        self._offset = offset

    def weights_at_step(self, step: int) -> dict[str, float]:
        """The shares of the batch trained at optimiser step ``step`` (empty in natural mode)."""
        if self.mode == "natural":
            return {}
        batch_start = step // self.steps_per_batch * self.steps_per_batch
        if self.adaptive is not None:
            shares = self._adaptive_shares(step // self.steps_per_batch)
        else:
            shares = self._scheduled_shares(batch_start) if self.schedule else self.weights
        return dict(zip(self.domain_names, shares, strict=True))

    def observe(self, step: int, report) -> None:
        """The learning signal of the batch trained at optimiser step ``step`` (adaptive mode:
        ``rlvr.data.adaptive.batch_report``, summed over processes); other modes ignore it."""
        if self.adaptive is not None:
            self.adaptive.observe(step // self.steps_per_batch, report)

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "fingerprint": self._fingerprint(),
            "position": self.position,
            "batch": self._cursor.batch,
            "offset": self._offset,
            "step": self._cursor.step,
            "drawn": list(self._cursor.drawn),
            "deficits": list(self._cursor.deficits),
            **({"adaptive": self.adaptive.state_dict()} if self.adaptive else {}),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        version = int(state.get("version", 0))
        if version > STATE_VERSION or version < 1:
            raise ValueError(
                f"mixture sampler state has version {version}; this rlvr reads versions 1 to "
                f"{STATE_VERSION}: resume with the rlvr that saved it"
            )
        if version == 1 and self.schedule is not None:
            raise ValueError(
                "mixture sampler state version 1 predates mixture schedules; it cannot resume a "
                "scheduled mixture: resume without mixture.schedule or start the run afresh"
            )
        if state.get("fingerprint") != self._fingerprint():
            raise ValueError(
                "mixture sampler state was saved for a different dataset, mode, weights, "
                "schedule, batch shape or seed; resume with the same data and mixture settings"
            )
        batch = int(state["batch"])
        step = int(state.get("step", batch * self.steps_per_batch))  # version 1: unscheduled
        self._cursor = _Cursor(batch, list(state["drawn"]), list(state["deficits"]), step)
        if self.adaptive is not None:
            self.adaptive.load_state_dict(state["adaptive"])
        self._offset = int(state["offset"])

    # -- internals ------------------------------------------------------------------------
    @property
    def _batch_span(self) -> int:
        return self.batch_size * self.mini_repeat_count * self.repeat_count

    def _reset_cursor(self) -> None:
        n = len(self._pools)
        self._cursor = _Cursor(0, [0] * n, [0.0] * n, 0)
        self._offset = 0

    def _scheduled_shares(self, step: int | None) -> list[float]:
        """The schedule's shares of this sampler's pools at ``step`` (None: each one's peak)."""
        assert self.schedule is not None
        shares = self.schedule.peak_shares() if step is None else self.schedule.shares_at(step)
        by_name = dict(zip(self.schedule.domains, shares, strict=True))
        return [by_name[d] for d in self.domain_names]

    def _adaptive_shares(self, batch: int) -> list[float]:
        """The adaptive shares of this sampler's pools (sorted names) for ``batch``."""
        assert self.adaptive is not None
        by_name = dict(zip(self.adaptive.domains, self.adaptive.shares(batch), strict=True))
        return [by_name[d] for d in self.domain_names]

    def _current_weights(self) -> list[float]:
        if self.adaptive is not None:
            return self._adaptive_shares(self._cursor.batch)
        return self._scheduled_shares(self._cursor.step) if self.schedule else self.weights

    def _quotas(self) -> list[int]:
        if self.mode == "natural":
            return [self.batch_size]
        return apportion(self._current_weights(), self.batch_size, self._cursor.deficits)

    def _step(self) -> None:
        quotas = self._quotas()
        weights = self._current_weights()
        cur = self._cursor
        for i, q in enumerate(quotas):
            cur.drawn[i] += q
            cur.deficits[i] += self.batch_size * weights[i] - q
        cur.batch += 1
        cur.step += self.steps_per_batch
        self._offset = 0

    def _batch_indices(self, batch: int) -> list[int]:
        if self.mode == "natural":
            return self._take(0, self._cursor.drawn[0], self.batch_size, drop_last=True)
        picked: list[int] = []
        for i, q in enumerate(self._quotas()):
            picked += self._take(i, self._cursor.drawn[i], q, drop_last=False)
        # mix domains inside the batch so each rank's shard holds a blend
        random.Random(f"{self.seed}:batch:{batch}").shuffle(picked)
        return picked

    def _take(self, pool: int, start: int, count: int, drop_last: bool) -> list[int]:
        """``count`` indices of pool ``pool`` from draw number ``start`` on, epoch by epoch.

        With ``drop_last`` (natural mode, as TRL) an epoch's tail shorter than a batch is
        skipped, so ``start`` counts whole batches of the epoch layout."""
        size = len(self._pools[pool])
        per_epoch = (size // count) * count if drop_last else size
        out: list[int] = []
        while len(out) < count:
            epoch, at = divmod(start + len(out), per_epoch)
            perm = self._permutation(pool, epoch)
            out += perm[at : min(per_epoch, at + count - len(out))]
        return out

    def _permutation(self, pool: int, epoch: int) -> list[int]:
        """Epoch ``epoch`` of a pool, built from the nearest cached earlier epoch."""
        if (pool, epoch) not in self._perm_cache:
            start = max((e for p, e in self._perm_cache if p == pool and e < epoch), default=-1)
            order = self._perm_cache.get((pool, start))
            for e in range(start + 1, epoch + 1):
                order = self._shuffled(pool, e, order)
            # only this epoch and the one before are read again while moving forward
            for key in [k for k in self._perm_cache if k[0] == pool and k[1] < epoch - 1]:
                del self._perm_cache[key]
            self._perm_cache[(pool, epoch)] = order
        return self._perm_cache[(pool, epoch)]

    def _shuffled(self, pool: int, epoch: int, previous: list[int] | None) -> list[int]:
        """A seeded shuffle whose head avoids the previous epoch's tail, so a weighted batch
        that straddles two epochs never holds one prompt twice (when the pool is big enough)."""
        order = list(self._pools[pool])
        random.Random(f"{self.seed}:{self.domain_names[pool]}:{epoch}").shuffle(order)
        window = self._max_quota[pool]
        if previous is None or len(order) < 2 * window:
            return order
        tail = set(previous[-window:])
        clashes = [i for i in range(window) if order[i] in tail]
        free = [j for j in range(window, len(order)) if order[j] not in tail]
        for i, j in zip(clashes, free, strict=False):
            order[i], order[j] = order[j], order[i]
        return order

    def _expand(self, prompts: list[int]) -> list[int]:
        one = [i for i in prompts for _ in range(self.mini_repeat_count)]
        return one * self.repeat_count

    def _fingerprint(self) -> str:
        sizes = [len(p) for p in self._pools]
        desc = (
            f"{self.mode}|{self.seed}|{self.batch_size}|{self.mini_repeat_count}|"
            f"{self.repeat_count}|{self.num_batches}|{self.num_samples}|"
            f"{self.domain_names}|{sizes}|{[round(w, 12) for w in self.weights]}"
        )
        if self.schedule is not None:  # unscheduled fingerprints stay as version 1 wrote them
            desc += f"|schedule:{self.schedule.describe()}|{self.steps_per_batch}"
        if self.adaptive is not None:
            desc += f"|adaptive:{self.adaptive.settings.describe()}|{self.steps_per_batch}"
        return hashlib.sha256(desc.encode()).hexdigest()[:16]


def _pools(
    domains: Sequence[str],
    mode: str,
    weights: Mapping[str, float] | None,
    schedule: MixtureSchedule | None = None,
) -> tuple[list[str], list[float], list[list[int]]]:
    """Index pools and normalised weights; natural mode is one pool over every row. A schedule
    has one pool per domain that has a share at some step (its weights: the peak shares)."""
    if mode == "natural":
        if weights:
            raise ValueError("mixture mode 'natural' takes no weights; use mode 'weighted'")
        return ["natural"], [1.0], [list(range(len(domains)))]
    if schedule is not None:
        weights = dict(zip(schedule.domains, schedule.peak_shares(), strict=True))
    if not weights:
        raise ValueError(f"mixture mode {mode!r} needs per-domain weights")
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"mixture weights must be >= 0 with a positive sum: {dict(weights)}")
    by_domain: dict[str, list[int]] = {}
    for i, d in enumerate(domains):
        by_domain.setdefault(d, []).append(i)
    missing = [d for d, w in weights.items() if w > 0 and d not in by_domain]
    if missing:
        raise ValueError(f"mixture weights name domains with no rows: {missing}; present: {sorted(by_domain)}")
    unweighted = sorted(set(by_domain) - {d for d, w in weights.items() if w > 0})
    if unweighted:
        log.info("mixture: rows of %s have no weight and are never sampled", unweighted)
    names = sorted(d for d, w in weights.items() if w > 0)
    total = sum(weights[d] for d in names)
    return names, [weights[d] / total for d in names], [by_domain[d] for d in names]


def heldout_mask(ids: Sequence[str], fraction: float, seed: int = 0) -> list[bool]:
    """True for rows whose id hashes below ``fraction``: a split by id, stable across runs."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"held-out fraction must be in [0, 1], got {fraction}")
    return [_unit_hash(f"{seed}:{row_id}") < fraction for row_id in ids]


def heldout_split(
    rows: Sequence[Mapping[str, Any]], fraction: float, seed: int = 0
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(train, heldout) by a hash of each row's ``id``; rows sharing an id share a side."""
    rows = list(rows)
    mask = heldout_mask([str(r["id"]) for r in rows], fraction, seed)
    train = [r for r, held in zip(rows, mask, strict=True) if not held]
    heldout = [r for r, held in zip(rows, mask, strict=True) if held]
    return train, heldout


def _unit_hash(text: str) -> float:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16) / float(16**12)
