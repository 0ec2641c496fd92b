"""Shared machinery of the micro-suite: problem-space split, seeded sampling, row building."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tasks.schema import make_row

SPLITS: tuple[str, ...] = ("train", "heldout")
HELDOUT_FRACTION = 0.2  # share of each level's problem space reserved for evaluation

Key = Hashable
Render = Callable[[Any, random.Random], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class DomainSpec:
    """How one domain enumerates, splits and renders its problems."""

    domain: str
    verifier: str
    levels: tuple[int, ...]
    space: Callable[[int], Sequence[Key]]  # canonical problems of a level, in a fixed order
    render: Render  # canonical problem + rng -> (user prompt, reference)


def stable_hash(text: str) -> str:
    """Hex digest that is identical on every machine and Python run (unlike ``hash``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_fraction(text: str) -> float:
    """Map text to [0, 1) uniformly; the split and the ids are functions of this."""
    return int(stable_hash(text)[:12], 16) / float(16**12)


def is_heldout(key: Key, fraction: float = HELDOUT_FRACTION) -> bool:
    """A canonical problem belongs to held-out iff its hash falls below ``fraction``."""
    return hash_fraction(repr(key)) < fraction


@lru_cache(maxsize=256)
def _split_pool(spec: DomainSpec, level: int, split: str) -> tuple[Key, ...]:
    want_heldout = split == "heldout"
    return tuple(k for k in spec.space(level) if is_heldout(k) == want_heldout)


def resolve_levels(spec: DomainSpec, difficulty: int | Sequence[int] | None) -> tuple[int, ...]:
    if difficulty is None:
        return spec.levels
    levels = (difficulty,) if isinstance(difficulty, int) else tuple(difficulty)
    unknown = [lv for lv in levels if lv not in spec.levels]
    if unknown or not levels:
        raise ValueError(f"micro/{spec.domain}: unknown difficulty {difficulty!r}; levels are {spec.levels}")
    return levels


def _even_counts(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _cycle_shuffled(pool: Sequence[Key], count: int, rng: random.Random) -> list[Key]:
    """Draw ``count`` problems without replacement, reshuffling the pool each time it runs out."""
    out: list[Key] = []
    while len(out) < count:
        order = list(pool)
        rng.shuffle(order)
        out.extend(order[: count - len(out)])
    return out


def generate_rows(
    spec: DomainSpec,
    n: int,
    seed: int,
    difficulty: int | Sequence[int] | None = None,
    split: str = "train",
) -> list[dict[str, Any]]:
    """``n`` canonical rows spread evenly over the requested levels, deterministic by seed."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
    levels = resolve_levels(spec, difficulty)
    rows: list[dict[str, Any]] = []
    for level, count in zip(levels, _even_counts(n, len(levels)), strict=True):
        pool = _split_pool(spec, level, split)
        if count and not pool:
            raise ValueError(f"micro/{spec.domain}: level {level} has no {split} problems")
        rng = random.Random(f"micro:{spec.domain}:{split}:{level}:{seed}")
        seen: dict[Key, int] = {}
        for key in _cycle_shuffled(pool, count, rng):
            repeat = seen.get(key, 0)
            seen[key] = repeat + 1
            rows.append(_row(spec, level, key, repeat, split, rng))
    random.Random(f"micro:{spec.domain}:{split}:order:{seed}").shuffle(rows)
    return rows


def _row(spec: DomainSpec, level: int, key: Key, repeat: int, split: str, rng: random.Random) -> dict[str, Any]:
    prompt, reference = spec.render(key, rng)
    row_id = f"micro-{spec.domain}-d{level}-{stable_hash(repr(key))[:12]}"
    if repeat:
        row_id += f"-r{repeat}"
    return make_row(
        prompt=[{"role": "user", "content": prompt}],
        domain=spec.domain,
        verifier=spec.verifier,
        reference=reference,
        source=f"micro/{spec.domain}/{split}",
        id=row_id,
    )


def user_text(row: Mapping[str, Any]) -> str:
    """The last user message of a row: the text every demonstration is derived from."""
    users = [m["content"] for m in row["prompt"] if m["role"] == "user"]
    return users[-1] if users else ""


def think(reasoning: str, answer: str) -> str:
    """The completion layout every domain shares: a short reasoning section, then the answer."""
    return f"<think>{reasoning}</think>\n{answer}"
