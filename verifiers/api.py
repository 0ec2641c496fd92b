"""The one call sites use: apply the reasoning format, run a verifier, never raise."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from verifiers.reasoning import ReasoningFormat, passes_format_gate, strip_think
from verifiers.registry import Verifier, get_verifier
from verifiers.verdict import Verdict, clip

log = logging.getLogger(__name__)

MAX_COMPLETION_CHARS = 200_000  # longer outputs are graded on their tail; bounds regex cost


def as_text(completion: Any) -> str:
    """Coerce whatever a generator produced (str, bytes, chat messages) into text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, bytes):
        return completion.decode("utf-8", errors="replace")
    if isinstance(completion, list):  # TRL conversational completions: [{role, content}, ...]
        parts = [m.get("content") or "" for m in completion if isinstance(m, Mapping)]
        return "\n".join(p if isinstance(p, str) else str(p) for p in parts)
    return "" if completion is None else str(completion)


def verify(
    completion: Any,
    reference: Mapping[str, Any],
    verifier: str | Verifier,
    reasoning: ReasoningFormat = ReasoningFormat(),
) -> Verdict:
    """Score one completion. Any failure inside the verifier becomes an ``error`` verdict."""
    text = as_text(completion)
    if reasoning.format_gate and not passes_format_gate(text):
        return Verdict.format_error("no </think>: the format gate requires a closed reasoning section")
    if reasoning.strip_think:
        text = strip_think(text)
    if len(text) > MAX_COMPLETION_CHARS:
        text = text[-MAX_COMPLETION_CHARS:]
    try:
        impl = get_verifier(verifier) if isinstance(verifier, str) else verifier
        return impl.verify(text, reference)
    except Exception as exc:  # a verifier bug is an infrastructure error, never a silent 0
        log.warning("verifier %s raised %s: %s", verifier, type(exc).__name__, exc)
        return Verdict.error(clip(f"verifier raised {type(exc).__name__}: {exc}"))
