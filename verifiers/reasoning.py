"""Reasoning-format handling shared by every verifier: strip ``<think>`` and M2RL's format gate."""

from __future__ import annotations

from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class ReasoningFormat:
    """How the reasoning section of a completion is treated before grading.

    strip_think: grade only the text after the last ``</think>`` (or drop a leading
        unterminated ``<think>`` section, which holds no answer).
    format_gate: M2RL's rule; a completion without ``</think>`` scores 0 as ``format_error``.
    """

    strip_think: bool = True
    format_gate: bool = False


def passes_format_gate(completion: str) -> bool:
    return THINK_CLOSE in completion


def strip_think(completion: str) -> str:
    """Return the answer part of a completion (text after the last ``</think>``)."""
    close = completion.rfind(THINK_CLOSE)
    if close != -1:
        return completion[close + len(THINK_CLOSE) :]
    if completion.lstrip().startswith(THINK_OPEN):
        return ""  # reasoning never closed: there is no answer section
    return completion
