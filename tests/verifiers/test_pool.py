"""The worker pool: input order, determinism, hard timeouts, crashes, killed workers, memory
cap, worker cap."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pool_doubles import KilledOnceVerifier, kill_when_published

from verifiers import Status, Verdict, verify
from verifiers.pool.pool import (
    MAX_ITEM_ATTEMPTS,
    MAX_WORKERS,
    VerifierPool,
    default_workers,
    verify_batch,
)
from verifiers.pool.worker import FAULT_ENV


@dataclass(frozen=True)
class SleepyVerifier:
    """Sleeps for reference["sleep"] seconds; optionally leaves a grandchild process behind."""

    name: str = "sleepy"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        if reference.get("pid_file"):
            child = subprocess.Popen(["sleep", "60"])
            Path(reference["pid_file"]).write_text(str(child.pid))
        time.sleep(float(reference["sleep"]))
        return Verdict.correct(completion)


@dataclass(frozen=True)
class CrashingVerifier:
    name: str = "crashing"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        os._exit(3)


@dataclass(frozen=True)
class HungryVerifier:
    name: str = "hungry"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        blob = bytearray(int(reference["megabytes"]) * 1024 * 1024)
        return Verdict.correct(str(len(blob)))


MATH = {"answer": "\\frac{1}{2}"}
MCQ = {"answer": "B", "num_options": 4}
MIXED = [
    ("\\boxed{0.5}", MATH, "math"),
    ("\\boxed{1/3}", MATH, "math"),
    ("no answer", MATH, "math"),
    ("Answer: B", MCQ, "science_mcq"),
    ("Answer: A or B", MCQ, "science_mcq"),
    ("Answer: 9.8 m/s^2", {"answer": "9.81", "unit": "m/s^2"}, "science_numeric"),
    ("\\boxed{2}", {"answer": ""}, "math"),
] * 6


@pytest.fixture(scope="module")
def pool() -> Iterator[VerifierPool]:
    with VerifierPool(2, timeout_s=20.0) as p:
        yield p


def test_results_match_in_process_and_keep_input_order(pool: VerifierPool) -> None:
    expected = [verify(c, r, v) for c, r, v in MIXED]
    assert pool.verify_batch(MIXED) == expected
    assert pool.verify_batch(MIXED[::-1]) == expected[::-1]  # deterministic, order kept
    assert {v.status for v in expected} >= {Status.CORRECT, Status.WRONG, Status.ERROR}


def test_timeout_kills_the_worker_and_its_children(pool: VerifierPool, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    slow = ("x", {"sleep": 60, "pid_file": str(pid_file)}, SleepyVerifier())
    before = pool.restarts
    start = time.monotonic()
    verdicts = pool.verify_batch([MIXED[0], slow, MIXED[3]], timeout_s=1.5)
    assert time.monotonic() - start < 30  # the slow item sleeps 60 s: it was cut short
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.TIMEOUT, Status.CORRECT]
    assert pool.restarts == before + 1
    grandchild = int(pid_file.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{grandchild}").exists() or "Z" in _proc_state(grandchild)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return "Z"


def test_crash_is_an_error_verdict_and_the_pool_recovers(pool: VerifierPool) -> None:
    before = pool.restarts
    verdicts = pool.verify_batch([("x", {}, CrashingVerifier()), MIXED[0], MIXED[0]])
    assert verdicts[0].status is Status.ERROR
    assert f"died on this item {MAX_ITEM_ATTEMPTS} times" in verdicts[0].details
    assert pool.restarts == before + MAX_ITEM_ATTEMPTS  # bounded: retried, then given up
    assert verdicts[1].is_correct and verdicts[2].is_correct
    assert pool.verify_batch(MIXED[:7]) == [verify(c, r, v) for c, r, v in MIXED[:7]]


def test_bad_items_are_error_verdicts_not_exceptions(pool: VerifierPool) -> None:
    verdicts = pool.verify_batch([("x", {}, "no_such_verifier"), ("x", {}, lambda: None)])
    assert [v.status for v in verdicts] == [Status.ERROR, Status.ERROR]
    assert "no_such_verifier" in verdicts[0].details


def test_memory_cap_grades_timeout() -> None:
    items = [
        ("x", {"megabytes": 2048}, HungryVerifier()),
        ("x", {"megabytes": 1}, HungryVerifier()),
    ]
    with VerifierPool(1, memory_limit_mb=512) as small:
        verdicts = small.verify_batch(items)
    assert verdicts[0].status is Status.TIMEOUT and "memory" in verdicts[0].details
    assert verdicts[1].is_correct


def test_worker_count_is_capped() -> None:
    assert 1 <= default_workers() <= MAX_WORKERS
    assert VerifierPool(100).size == MAX_WORKERS
    assert verify_batch([]) == []


def test_one_off_verify_batch() -> None:
    verdicts = verify_batch(MIXED[:3], workers=2, timeout_s=20.0)
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.WRONG, Status.FORMAT_ERROR]


def test_items_after_a_timeout_or_crash_inside_a_chunk_are_requeued(pool: VerifierPool) -> None:
    items = [MIXED[0]] * 200
    items[50] = ("x", {"sleep": 60}, SleepyVerifier())  # chunks hold 25 items here
    items[120] = ("x", {}, CrashingVerifier())
    verdicts = pool.verify_batch(items, timeout_s=1.5)
    assert verdicts[50].status is Status.TIMEOUT
    assert verdicts[120].status is Status.ERROR
    others = [v for i, v in enumerate(verdicts) if i not in (50, 120)]
    assert all(v.is_correct for v in others)


def test_options_apply_to_verifiers_named_by_string() -> None:
    text = ("I computed 3 then 1,234 apples", {"answer": "1234"}, "math")
    with VerifierPool(1, options={"math": {"fallback_last_number": True}}) as lenient:
        assert lenient.verify_batch([text])[0].is_correct
    assert verify(*text).status is Status.FORMAT_ERROR


def test_worker_killed_mid_batch_is_replaced_and_every_item_scored(pool: VerifierPool, tmp_path: Path) -> None:
    scorable = [item for item in MIXED if verify(*item).status is not Status.ERROR]
    pid_file = tmp_path / "worker.pid"
    items = list(scorable)
    items.insert(len(items) // 2, ("x", {"pid_file": str(pid_file)}, KilledOnceVerifier()))
    expected = [verify(c, r, v) for c, r, v in scorable]
    before = pool.restarts
    killer = kill_when_published(pid_file)
    verdicts = pool.verify_batch(items)
    killer.join(timeout=5)
    assert pid_file.exists(), "the item never reached a worker"
    assert pool.restarts == before + 1  # the kill happened while the batch was in flight
    marked = verdicts.pop(len(scorable) // 2)
    assert marked.is_correct  # the killed item was graded again on a fresh worker
    assert verdicts == expected
    assert pool.verify_batch(scorable) == expected  # and the pool keeps working


@pytest.mark.slow  # three cold worker starts; the GRPO abort test relies on this hook
def test_fault_hook_kills_workers_on_the_chosen_items(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "math:2")
    items = [MIXED[3], MIXED[0], MIXED[0]]  # poisoned: math at an even index, i.e. item 2 only
    with VerifierPool(1) as faulty:
        verdicts = faulty.verify_batch(items)
        assert faulty.restarts == MAX_ITEM_ATTEMPTS
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.CORRECT, Status.ERROR]
    assert f"worker died on this item {MAX_ITEM_ATTEMPTS} times" in verdicts[2].details


def test_chunks_follow_the_measured_cost_of_each_verifier() -> None:
    cheap = [MIXED[3]] * 2000  # a multiple-choice letter: microseconds
    slow = [("x", {"sleep": 0.01}, SleepyVerifier())] * 40  # 10 ms each
    with VerifierPool(2, timeout_s=20.0) as fresh:
        fresh.verify_batch(cheap[:64])  # learns the letter check's cost
        sent = fresh.chunks_sent
        assert all(v.is_correct for v in fresh.verify_batch(cheap))
        assert fresh.chunks_sent - sent <= 20  # hundreds of items per message, not one
        assert fresh.costs["science_mcq"] < 0.002
        sent = fresh.chunks_sent
        assert all(v.is_correct for v in fresh.verify_batch(slow))
        assert fresh.chunks_sent - sent >= 8  # slow items spread out over both workers
        assert 0.005 < fresh.costs["sleepy"] < 0.5


def test_the_time_limit_is_per_item_inside_a_chunk() -> None:
    # four 0.4 s items share the first chunk (their cost is not known yet): 1.6 s together,
    # above the 1 s limit, yet no item overran, so none is cut short
    items = [("x", {"sleep": 0.4}, SleepyVerifier())] * 8
    with VerifierPool(1, timeout_s=1.0) as one:
        verdicts = one.verify_batch(items)
        assert [v.status for v in verdicts] == [Status.CORRECT] * 8
        assert one.restarts == 0
        assert one.chunks_sent < len(items)


def test_warm_grades_the_items_once_on_every_worker() -> None:
    with VerifierPool(2, timeout_s=20.0) as fresh:
        fresh.warm(MIXED[:7])
        assert fresh.chunks_sent == 2  # one whole copy per worker
        assert {"math", "science_mcq", "science_numeric"} <= set(fresh.costs)
        assert fresh.verify_batch(MIXED[:7]) == [verify(c, r, v) for c, r, v in MIXED[:7]]


@dataclass(frozen=True)
class GcFreezeProbe:
    """Wrong, with the worker's count of objects frozen out of the garbage collector."""

    name: str = "gc_freeze_probe"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        import gc

        return Verdict.wrong(details=str(gc.get_freeze_count()))


def test_workers_freeze_what_a_new_verifier_loaded_after_its_first_chunk() -> None:
    # a full collection walks every object a verifier imported (sympy: ~25 ms a collection),
    # so a worker freezes its heap once a chunk that built a verifier is answered
    with VerifierPool(1, timeout_s=20.0) as pool:
        first = pool.verify_batch([("x", {}, GcFreezeProbe())])
        later = pool.verify_batch([("x", {}, GcFreezeProbe())] * 3)
    assert int(first[0].details) == 0
    assert all(int(v.details) > 1000 for v in later)


def test_equal_answers_share_one_verdict_and_keep_their_order(pool: VerifierPool) -> None:
    items = [("Answer: B", MCQ, "science_mcq"), ("Answer: C", MCQ, "science_mcq")] * 50
    verdicts = pool.verify_batch(items)
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.WRONG] * 50
    assert len({id(v) for v in verdicts[0::2]}) == 1 and len({id(v) for v in verdicts[1::2]}) == 1
    assert verdicts == [verify(c, r, v) for c, r, v in items]
