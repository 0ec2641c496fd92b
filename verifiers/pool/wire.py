"""The pool's messages to its workers: a chunk of items encoded once, verifiers pickled once.

A chunk is one pickle: the reasoning format, each distinct verifier object's bytes once, and
the items (batch index, completion, reference, verifier name or table index). Workers answer
with plain tuples (score, status, extracted, details) and the seconds each item took.
"""

from __future__ import annotations

import pickle
from typing import Any

from verifiers.reasoning import ReasoningFormat
from verifiers.verdict import Status, Verdict, clip

# (batch index, completion, reference, verifier name or pickled verifier, cost key)
Entry = tuple[int, Any, dict, "str | bytes", str]
STATUS = {s.value: s for s in Status}


MAX_KEPT_VERDICTS = 4096  # distinct answers kept for reuse; cheap checks repeat a few


def verdict_from_answer(
    answer: tuple[float, str, str | None, str], kept: dict[tuple, Verdict] | None = None
) -> Verdict:
    """The verdict of a worker's answer; with ``kept``, equal answers share one (immutable)
    Verdict, built once: for checks of a few microseconds building it was the pool's cost."""
    if kept is not None and answer in kept:
        return kept[answer]
    score, status, extracted, details = answer
    verdict = Verdict(score, STATUS[status], extracted, details)
    if kept is not None and len(kept) < MAX_KEPT_VERDICTS:
        kept[answer] = verdict
    return verdict


def cost_key(verifier: Any) -> str:
    """The name per-item costs are learned under: a registry name, or the object's name."""
    if isinstance(verifier, str):
        return verifier
    return str(getattr(verifier, "name", type(verifier).__name__))


def pickled_verifier(verifier: Any, memo: dict[int, tuple[Any, bytes | Verdict]]) -> bytes | Verdict:
    """A verifier object as bytes for the workers, once per batch; an unpicklable one is a
    setup bug, graded ``error`` with the reason."""
    if id(verifier) not in memo:
        try:
            memo[id(verifier)] = (verifier, pickle.dumps(verifier))
        except Exception as exc:
            memo[id(verifier)] = (
                verifier,
                Verdict.error(clip(f"item cannot be sent to a worker: {exc!r}")),
            )
    return memo[id(verifier)][1]


def encode_chunk(chunk: list[Entry], fmt: ReasoningFormat, results: list[Verdict | None]) -> tuple[list[Entry], bytes]:
    """One message for a chunk: the reasoning format, each distinct pickled verifier once,
    and the entries. Entries that cannot be pickled (a reference holding an open file, say)
    are graded ``error`` here and left out."""
    payloads: dict[bytes, int] = {}
    wire = []
    for index, completion, reference, ref, _ in chunk:
        sent: str | int = payloads.setdefault(ref, len(payloads)) if isinstance(ref, bytes) else ref
        wire.append((index, completion, reference, sent))
    try:
        return chunk, pickle.dumps((fmt, list(payloads), wire), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        kept = []
        for entry in chunk:
            try:
                pickle.dumps(entry[1:3])
                kept.append(entry)
            except Exception as exc:
                results[entry[0]] = Verdict.error(clip(f"item cannot be sent to a worker: {exc!r}"))
        return encode_chunk(kept, fmt, results) if kept else ([], b"")
