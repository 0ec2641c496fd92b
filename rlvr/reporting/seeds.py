"""Seeds as statistics: ``<label>-seed<N>`` results grouped into rows, mean ± sd cells, paired diffs.

A study evaluates each trained model once per seed under ``<stem>-seed<N>`` labels (``math-seed0``,
``ties-seed1``, ...); ``base`` and ``sft`` carry no suffix. Results whose labels differ only by
that suffix form one :class:`ModelGroup`; a label without it is a group of one (seed ``None``).
Seeds pair across models (``ties-seed1`` is merged from the seed-1 experts), so differences
between groups are taken seed by seed over the seeds both have.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlvr.reporting.tables import ModelResult

SEED_SUFFIX = re.compile(r"^(?P<stem>.+)-seed(?P<seed>\d+)$")
Seed = int | None  # None: a label without a seed suffix


def split_seed(label: str) -> tuple[str, Seed]:
    """``"math-seed1"`` -> ``("math", 1)``; ``"sft"`` -> ``("sft", None)``."""
    match = SEED_SUFFIX.match(label)
    return (match["stem"], int(match["seed"])) if match else (label, None)


def seed_rank(seed: Seed) -> int:
    """Sort key: the unsuffixed label first, then seeds in numeric order (seed2 before seed10)."""
    return -1 if seed is None else seed


@dataclass(frozen=True)
class Stat:
    """A score over seeds: mean, sample standard deviation (ddof=1; None under two values), n."""

    mean: float | None
    sd: float | None = None
    n: int = 0

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Stat:
        """The statistic of the values that are there (None values skipped)."""
        vals = [float(v) for v in values if v is not None]
        if not vals:
            return cls(None, None, 0)
        sd = statistics.stdev(vals) if len(vals) >= 2 else None
        return cls(statistics.mean(vals), sd, len(vals))

    def text(self) -> str:
        """``23.10 ± 1.20`` with a spread, ``23.10`` without one, ``–`` when missing."""
        if self.mean is None or self.mean != self.mean:  # None or NaN
            return "–"
        return f"{self.mean:.2f}" if self.sd is None else f"{self.mean:.2f} ± {self.sd:.2f}"


@dataclass(frozen=True)
class ModelGroup:
    """One table row: the results of one model over its seeds (seed -> result, seed order)."""

    label: str  # the stem: "math", "ties", "mixed"
    role: str
    members: Mapping[Seed, ModelResult]

    @property
    def n(self) -> int:
        return len(self.members)

    @property
    def first(self) -> ModelResult:
        return next(iter(self.members.values()))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.members.values())

    def values(self, fn: Callable[..., float | None], *args: Any) -> dict[Seed, float]:
        """``fn(result, *args)`` per seed, keyed by seed number; seeds without a value left out."""
        out: dict[Seed, float] = {}
        for seed, result in self.members.items():
            value = fn(result, *args)
            if value is not None:
                out[seed] = value
        return out

    def stat(self, fn: Callable[..., float | None], *args: Any) -> Stat:
        """Mean ± sd over seeds of ``fn(result, *args)``."""
        return Stat.of(self.values(fn, *args).values())


def group_results(results: Sequence[ModelResult]) -> list[ModelGroup]:
    """Results grouped by label stem, in the order their first member appears in ``results``."""
    members: dict[str, dict[Seed, ModelResult]] = {}
    for r in results:
        stem, seed = split_seed(r.label)
        members.setdefault(stem, {})[seed] = r
    groups = []
    for stem, by_seed in members.items():
        ordered = {s: by_seed[s] for s in sorted(by_seed, key=seed_rank)}
        roles = [r.role for r in ordered.values()]
        # the members' role (they agree unless an override names one seed only): most common
        role = max(dict.fromkeys(roles), key=roles.count)
        groups.append(ModelGroup(stem, role, ordered))
    return groups


def paired_difference(a: Mapping[Seed, float], b: Mapping[Seed, float]) -> tuple[Stat, str | None]:
    """``a - b`` seed by seed over the seeds both have, and whether it exceeds the seed spread.

    Verdict: ``yes`` (n >= 2 and |mean| > sd of the paired differences), ``no`` (n >= 2 and not),
    ``one seed`` (n == 1), ``no pairing`` (no common seed: mean(a) - mean(b), no spread),
    None when either side has no value.
    """
    if not a or not b:
        return Stat(None), None
    common = [s for s in a if s in b]
    if not common:
        return Stat(statistics.mean(a.values()) - statistics.mean(b.values()), None, 0), "no pairing"
    diff = Stat.of(a[s] - b[s] for s in common)
    if diff.n < 2 or diff.mean is None or diff.sd is None:
        return diff, "one seed"
    return diff, "yes" if abs(diff.mean) > diff.sd else "no"


def seed_summary(labels: Iterable[str]) -> str:
    """``"2 seed(s) (0, 1)"``: how many distinct seeds a set of run labels covers."""
    seeds = sorted({split_seed(label)[1] for label in labels}, key=seed_rank)
    named = [str(s) for s in seeds if s is not None]
    return f"{len(seeds)} seed(s)" + (f" ({', '.join(named)})" if named else "")
