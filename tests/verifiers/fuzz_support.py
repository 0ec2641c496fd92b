"""Shared fuzzing pieces: hostile text makers, per-item timing and the verdict contract check."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from verifiers import ReasoningFormat, Status, Verdict, verify
from verifiers.pool.pool import VerifierPool

# Items per verifier in the slow tier's long fuzz runs: 4,000 in `make test` (each default-tier
# test runs a few hundred); the defects docs/verifiers.md lists were found at 10,000, which
# RLVR_FUZZ_COUNT=10000 runs again.
MANY = int(os.environ.get("RLVR_FUZZ_COUNT", "4000"))

MARGIN_S = 60.0  # generous: a loaded 2-core machine, a sandbox worker restarted mid-item
INFRA_PREFIX = "sandbox failure"  # how the code verifier marks an infrastructure failure


def binary_text(rng: random.Random, n: int) -> str:
    """NUL bytes, control characters, lone surrogates, replacement characters, raw bytes."""
    pieces = ["\x00", "\x01", "\x7f", "\ud800", "\udfff", "\ufffd", "\uffff", "\x1b[2J", "\r"]
    junk = bytes(rng.getrandbits(8) for _ in range(n)).decode("utf-8", errors="surrogateescape")
    return "".join(rng.choice(pieces) if rng.random() < 0.1 else ch for ch in junk)


def unicode_text(rng: random.Random, n: int) -> str:
    ranges = [(0x20, 0x7E), (0x300, 0x36F), (0x590, 0x6FF), (0x4E00, 0x4FFF), (0x1F600, 0x1F64F)]
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(n))


def huge_text(rng: random.Random) -> str:
    """One to four megabytes of one repeated unit (prose, blanks, braces or fences)."""
    unit = rng.choice(["lorem ipsum ", " ", "\n", "{", "`", "<think>", "x = 1\n", "\x00"])
    return unit * (rng.randint(1, 4) * 1_000_000 // len(unit))


def with_think(rng: random.Random, answer: str) -> str:
    """The answer behind a reasoning section: closed, unclosed, doubled or holding fences."""
    thought = rng.choice(["let me think", "```python\nprint('draft')\n```", "<think>nested"])
    return rng.choice(
        [
            f"<think>{thought}</think>{answer}",
            f"<think>{thought}</think>\n<think>again</think>\n{answer}",
            f"<think>{thought}\n{answer}",  # never closed: the whole answer is reasoning
            f"{answer}</think>",
            f"</think>{answer}<think>",
        ]
    )


@dataclass(frozen=True)
class Timed:
    verdict: Verdict
    wall_s: float
    label: str


def timed_in_threads(
    items: Sequence[tuple[str, dict, Any, str]], threads: int, reasoning: ReasoningFormat
) -> list[Timed]:
    """Each ``(completion, reference, verifier, label)`` through ``verify``, timed on its own
    thread: the scorer's route for self-isolating verifiers (code), which run no worker pool."""

    def one(item: tuple[str, dict, Any, str]) -> Timed:
        start = time.monotonic()
        verdict = verify(item[0], item[1], item[2], reasoning)
        return Timed(verdict, time.monotonic() - start, item[3])

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(one, items))


def timed_through_pool(pool: VerifierPool, items: Iterable[tuple[str, dict, Any, str]]) -> list[Timed]:
    """Each item alone through the warm verifier pool (its hard limit applies), timed; items
    may be made lazily, so megabyte inputs need not all be held at once."""
    out = []
    for completion, reference, verifier, label in items:
        start = time.monotonic()
        (verdict,) = pool.verify_batch([(completion, reference, verifier)])
        out.append(Timed(verdict, time.monotonic() - start, label))
    return out


@dataclass(frozen=True)
class Summary:
    statuses: Counter
    by_label: Counter
    infra: int
    slowest: Timed
    wall_s: float

    def by_kind(self) -> Counter:
        """Statuses per generator kind (the part of a label after the reference's name)."""
        kinds: Counter = Counter()
        for key, n in self.by_label.items():
            label, status = key.rsplit(":", 1)
            kinds[f"{label.split('/')[-1]}:{status}"] += n
        return kinds

    def line(self, name: str) -> str:
        return (
            f"{name}: {sum(self.statuses.values())} items in {self.wall_s:.1f} s; "
            f"statuses {dict(sorted(self.statuses.items()))}; infra {self.infra}; slowest "
            f"{self.slowest.wall_s:.2f} s ({self.slowest.label}: {self.slowest.verdict.status.value})"
        )


def check_contract(results: Sequence[Timed], hard_limit_s: float, wall_s: float) -> Summary:
    """Assert the verifier contract on every item and summarise the run.

    Every result is a Verdict with a valid Status, a score in [0, 1] and short details, back
    within the hard limit (plus margin). ``error`` is a verifier bug unless the verifier marks
    it as a sandbox failure; those are counted as infrastructure, apart from model output."""
    bad, late, infra = [], [], 0
    for r in results:
        v = r.verdict
        if not (isinstance(v, Verdict) and isinstance(v.status, Status)):
            bad.append((r.label, v))
            continue
        if not (0.0 <= v.score <= 1.0 and len(v.details) <= 500):
            bad.append((r.label, v))
        if v.status is Status.ERROR:
            if v.details.startswith(INFRA_PREFIX):
                infra += 1
            else:
                bad.append((r.label, v))
        if r.wall_s > hard_limit_s + MARGIN_S:
            late.append((r.label, round(r.wall_s, 1), v.status.value))
    assert not bad, f"{len(bad)} contract violations, e.g. {bad[:5]}"
    assert not late, f"{len(late)} items past {hard_limit_s:g} s + margin, e.g. {late[:5]}"
    return Summary(
        Counter(r.verdict.status.value for r in results),
        Counter(f"{r.label}:{r.verdict.status.value}" for r in results),
        infra,
        max(results, key=lambda r: r.wall_s),
        wall_s,
    )


def run_and_check(run: Callable[[], list[Timed]], hard_limit_s: float, name: str) -> Summary:
    """Run a timed batch, check the contract, print the summary (visible with ``-s``)."""
    start = time.monotonic()
    results = run()
    summary = check_contract(results, hard_limit_s, time.monotonic() - start)
    print(f"\n{summary.line(name)}\nby kind: {dict(sorted(summary.by_kind().items()))}")
    return summary
