"""Scoring single-turn completions while the rest of their batch still decodes.

The KV-cache sampler reports rows as they leave the batch (``sample_tokens(on_finished=...)``);
their text goes to the bridge's scorer on one background thread, and when TRL asks for the
batch's rewards only what was not scored yet is graded then. TRL 1.16 scores after generation
ends (``async`` reward functions are awaited together, after it), so this is where scoring can
overlap generation. A verdict is reused only for the exact (batch row, text, reference,
verifier) it was computed for: a completion that TRL decodes differently is scored again,
never mis-scored. The scorer is never called from two threads at once: the batch's own
scoring waits for the background work to finish first.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from verifiers import Verdict

log = logging.getLogger(__name__)

Key = tuple[int, str, str, str]  # batch row, completion text, reference JSON, verifier name
Scorer = Callable[[list[tuple[str, dict, str]]], list[Verdict]]


class EarlyScores:
    """Verdicts computed ahead of TRL's reward call, keyed by what they were computed for."""

    def __init__(self, scorer: Scorer, timer: Any) -> None:
        self.scorer = scorer
        self.timer = timer  # its ahead_s: background grading, overlapped with generation
        self._executor: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._verdicts: dict[Key, Verdict] = {}
        self._lock = threading.Lock()

    def submit(self, keys: Sequence[Key]) -> None:
        """Start scoring these rows in the background (returns at once)."""
        if not keys:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="rlvr-early-scoring")
        self._futures.append(self._executor.submit(self._score, list(keys)))

    def collect(self) -> dict[Key, Verdict]:
        """Every verdict scored ahead since the last call, once the background work is done.
        A failed background call is logged and its rows left to be scored now."""
        futures, self._futures = self._futures, []
        for future in futures:
            try:
                future.result()
            except Exception as exc:  # the rows are scored again on the caller's thread
                log.warning("scoring ahead failed (%s: %s)", type(exc).__name__, exc)
        with self._lock:
            verdicts, self._verdicts = self._verdicts, {}
        return verdicts

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _score(self, keys: list[Key]) -> None:
        start = time.perf_counter()
        items = [(text, json.loads(reference), verifier) for _, text, reference, verifier in keys]
        verdicts = self.scorer(items)
        with self._lock:
            self._verdicts.update(zip(keys, verdicts, strict=True))
            self.timer.ahead_s += time.perf_counter() - start


def early_keys(
    rows: Sequence[int], texts: Sequence[str], inputs: Sequence[dict[str, Any]], domains: set[str]
) -> list[Key]:
    """Keys of the finished rows worth scoring ahead: those of a domain the bridge scores."""
    return [
        (row, text, inputs[row]["reference"], inputs[row]["verifier"])
        for row, text in zip(rows, texts, strict=True)
        if inputs[row]["domain"] in domains
    ]
