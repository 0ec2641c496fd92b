"""The embedded micro-suite: one uniform API over short procedural tasks for a tiny model.

``generate(domain, n, seed, difficulty, split)`` returns canonical rows (``tasks.schema``);
``demonstration(row)`` returns the SFT target completion for a row. Train and held-out
splits partition each level's problem space by a hash of the canonical problem, so they never
share a problem, a prompt or an id. The agent domain's generator lives with its environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from tasks.micro import agent, code, instruction, math, science
from tasks.micro._common import HELDOUT_FRACTION, SPLITS, user_text
from tasks.schema import reference_of

_MODULES: dict[str, ModuleType] = {
    "math": math,
    "code": code,
    "science": science,
    "instruction": instruction,
}
MICRO_DOMAINS: tuple[str, ...] = tuple(_MODULES)
# agent rows carry a tool environment and a system tool listing: kept out of the
# single-turn text domains above, but generate/demonstration/levels serve them too.
_MODULES["agent"] = agent
DOMAINS: tuple[str, ...] = tuple(_MODULES)  # every micro-suite domain, agent included


def _module(domain: str) -> ModuleType:
    try:
        return _MODULES[domain]
    except KeyError:
        raise ValueError(
            f"no micro-suite generator for domain {domain!r}; known: {', '.join(DOMAINS)}"
        ) from None


def levels(domain: str) -> tuple[int, ...]:
    """The difficulty levels a domain offers, easiest first."""
    return _module(domain).LEVELS


def generate(
    domain: str,
    n: int,
    seed: int,
    difficulty: int | Sequence[int] | None = None,
    split: str = "train",
) -> list[dict[str, Any]]:
    """``n`` rows of one domain; ``difficulty`` is a level, a list of levels, or None for all."""
    return _module(domain).generate(n, seed, difficulty, split)


def demonstration(row: Mapping[str, Any]) -> str:
    """The SFT target completion of a micro-suite row: short ``<think>``, then the answer."""
    return _module(row["domain"]).demonstration(user_text(row), reference_of(row))


__all__ = [
    "DOMAINS",
    "HELDOUT_FRACTION",
    "MICRO_DOMAINS",
    "SPLITS",
    "demonstration",
    "generate",
    "levels",
]
