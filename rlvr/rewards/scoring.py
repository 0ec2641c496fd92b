"""Batch scoring for training and evaluation: the verifier worker pool behind a plain callable."""

from __future__ import annotations

import atexit
import logging
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.rewards import judging  # noqa: F401  (registers the in-process "hf" judge backend)
from rlvr.rewards.bridge import Scorer
from verifiers import ReasoningFormat, Verdict, Verifier, get_verifier, verify
from verifiers.api import MAX_COMPLETION_CHARS, as_text
from verifiers.pool.pool import VerifierPool
from verifiers.reasoning import passes_format_gate, strip_think
from verifiers.verdict import clip

log = logging.getLogger(__name__)


class VerifierCache:
    """Configured verifier objects by name; objects (not names) travel to the workers, so
    verifiers registered outside ``verifiers`` (e.g. environment replays) need no import there."""

    def __init__(self, options: dict[str, dict[str, Any]]) -> None:
        self.options = options
        self.built: dict[str, Verifier] = {}

    def __call__(self, name: str) -> Verifier:
        if name not in self.built:
            if name == "workplace":  # registered by the environments package (tasks -> verifiers)
                import tasks.environments  # noqa: F401
            self.built[name] = get_verifier(name, **self.options.get(name, {}))
        return self.built[name]


def self_isolating(verifier: Verifier) -> bool:
    """Verifiers that run untrusted code in their own sandbox pool (e.g. ``code``) are called
    from this process: nesting them inside verifier workers would multiply sandbox pools."""
    return hasattr(verifier, "verify_many")


def grades_batches(verifier: Verifier) -> bool:
    """Verifiers that declare ``grades_batches`` (the judge: one backend batch, each distinct
    prompt once) get a whole batch in one ``verify_many`` call. Other self-isolating ones (code:
    its own sandbox pool) run item by item from threads, the rest in the killable worker pool."""
    return bool(getattr(verifier, "grades_batches", False))


def graded_text(completion: Any, reasoning: ReasoningFormat) -> str | Verdict:
    """What ``verifiers.verify`` hands its verifier, or the format gate's verdict."""
    text = as_text(completion)
    if reasoning.format_gate and not passes_format_gate(text):
        return Verdict.format_error("no </think>: the format gate requires a closed reasoning section")
    text = strip_think(text) if reasoning.strip_think else text
    return text[-MAX_COMPLETION_CHARS:]


def verify_batch(verifier: Any, items: list[tuple[Any, dict]], reasoning: ReasoningFormat) -> list[Verdict]:
    """``verify`` of every item through one ``verifier.verify_many`` call: the same reasoning
    format, and a verifier that raises gives every item an ``error`` verdict (never 0.0)."""
    out: list[Verdict | None] = [None] * len(items)
    todo, texts = [], []
    for i, (completion, _) in enumerate(items):
        graded = graded_text(completion, reasoning)
        if isinstance(graded, Verdict):
            out[i] = graded
        else:
            todo.append(i)
            texts.append(graded)
    try:
        verdicts = verifier.verify_many(texts, [items[i][1] for i in todo]) if todo else []
    except Exception as exc:  # a verifier bug is an infrastructure error, never a silent 0
        log.warning("verifier %s raised %s: %s", verifier, type(exc).__name__, exc)
        verdicts = [Verdict.error(clip(f"verifier raised {type(exc).__name__}: {exc}"))] * len(todo)
    for i, v in zip(todo, verdicts, strict=True):
        out[i] = v
    return [v if v is not None else Verdict.error("item was not scored") for v in out]


def build_scorer(
    reasoning: ReasoningFormat, options: dict[str, dict[str, Any]], workers: int, timeout_s: float
) -> Scorer:
    """A scorer that runs every item through the warm worker pool with a hard time limit."""
    verifier_for = VerifierCache(options)
    if "judge" in options:  # its backend and rubric are checked now, before any model loads
        verifier_for("judge")
    pool = VerifierPool(workers or None, timeout_s=timeout_s, reasoning=reasoning)
    atexit.register(pool.close)

    def score(items: list[tuple[str, dict, str]]) -> list[Verdict]:
        results: list[Verdict | None] = [None] * len(items)
        pooled, isolated, batched = [], [], defaultdict(list)
        for i, (_, _, name) in enumerate(items):
            if grades_batches(verifier_for(name)):
                batched[name].append(i)
            else:
                (isolated if self_isolating(verifier_for(name)) else pooled).append(i)
        with ThreadPoolExecutor(max_workers=8) as threads:
            # sandboxed items run from threads while the pool grades the rest: a mixed batch
            # waits for the slower of the two, not their sum
            def run(i):
                return verify(items[i][0], items[i][1], verifier_for(items[i][2]), reasoning)

            sandboxed = threads.map(run, isolated)
            for name, where in batched.items():
                part = [(items[i][0], items[i][1]) for i in where]
                verdicts = verify_batch(verifier_for(name), part, reasoning)
                for i, v in zip(where, verdicts, strict=True):
                    results[i] = v
            if pooled:
                batch = [(items[i][0], items[i][1], verifier_for(items[i][2])) for i in pooled]
                for i, v in zip(pooled, pool.verify_batch(batch), strict=True):
                    results[i] = v
            for i, v in zip(isolated, sandboxed, strict=True):
                results[i] = v
        return [v if v is not None else Verdict.error("item was not scored") for v in results]

    return score


def sequential_scorer(reasoning: ReasoningFormat, options: dict[str, dict[str, Any]] | None = None) -> Scorer:
    """In-process scorer without the worker pool (no hard time limit); for tests and tools."""
    verifier_for = VerifierCache(options or {})

    def score(items: list[tuple[str, dict, str]]) -> list[Verdict]:
        return [verify(c, ref, verifier_for(name), reasoning) for c, ref, name in items]

    return score
