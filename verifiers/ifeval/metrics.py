"""IFEval's aggregate scores: prompt-level (all followed) and instruction-level accuracy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Accuracy:
    """Prompt-level and instruction-level accuracy over a set of responses, in [0, 1]."""

    prompts_followed: int
    prompts: int
    instructions_followed: int
    instructions: int

    @property
    def prompt_level(self) -> float:
        return self.prompts_followed / self.prompts if self.prompts else 0.0

    @property
    def instruction_level(self) -> float:
        return self.instructions_followed / self.instructions if self.instructions else 0.0


SUMMARY = "{followed}/{total} instructions followed"  # the verdict's ``extracted`` field


def counts_of(summary: str | None) -> tuple[int, int] | None:
    """(followed, total) from an ifeval verdict's summary; None for any other text."""
    head = (summary or "").split(" ", 1)
    followed, _, total = head[0].partition("/")
    if len(head) != 2 or head[1] != "instructions followed" or not (followed.isdigit() and total.isdigit()):
        return None
    return int(followed), int(total)


def prompt_score(results: Sequence[bool]) -> float:
    """All-or-nothing score of one response: 1.0 only if every instruction is followed."""
    return 1.0 if all(results) else 0.0


def instruction_score(results: Sequence[bool]) -> float:
    """Fraction of one response's instructions that are followed (1.0 when there are none)."""
    return sum(results) / len(results) if results else 1.0


def accuracy(per_response: Iterable[Sequence[bool]]) -> Accuracy:
    """Aggregate per-instruction results of many responses the way IFEval reports them."""
    rows = [list(r) for r in per_response]
    return Accuracy(
        prompts_followed=sum(all(r) for r in rows),
        prompts=len(rows),
        instructions_followed=sum(sum(r) for r in rows),
        instructions=sum(len(r) for r in rows),
    )
