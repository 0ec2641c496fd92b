"""Fuzz: seeded generated responses through the ``ifeval`` verifier in the worker pool.

References: the IFEval benchmark's own rows (shared data), micro-suite rows and generated
ones drawing every instruction id's kwargs over their valid ranges (``fuzz_ifeval_inputs``).
Responses: the benchmark's GPT-4 answers, answers exactly at each count boundary, and
hostile text (megabytes, binary, lone surrogates, thousands of markup units, deep or broken
JSON, every script, reasoning sections). Every verifier variant (strict/loose, all/fraction)
runs in the pool as the scorer runs it; every verdict must be a valid non-``error`` status.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import _requirements as required
import pytest
from fuzz_ifeval_inputs import checked, generated_reference, response
from fuzz_support import MANY, run_and_check, timed_through_pool

from tasks.micro import instruction as micro_instruction
from tasks.schema import reference_of
from verifiers.ifeval import CHECKS, IFEvalVerifier
from verifiers.pool.pool import VerifierPool

FUZZED = ("ifeval",)
POOL_TIMEOUT_S = 10.0  # the pool's default: what the scorer runs ifeval under
DATA = "instruction_following"
VARIANTS = [IFEvalVerifier(mode=m, reward=r) for m in ("strict", "loose") for r in ("all", "fraction")]


def _jsonl(name: str) -> list[dict[str, Any]]:
    path = required.shared_data(DATA) / name
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> tuple[list[tuple[str, dict]], list[str]]:
    """(label, reference) pools and the benchmark's real responses."""
    data = [
        ("data", checked({k: row[k] for k in ("instruction_id_list", "kwargs", "prompt")}))
        for row in _jsonl("ifeval_input_data.jsonl")
    ]
    micro = [("micro", checked(reference_of(row))) for row in micro_instruction.generate(60, 1)]
    real = [row["response"] for row in _jsonl("ifeval_input_response_data_gpt4_20231107_145030.jsonl")]
    return data + micro, real


def generate(seed: int, count: int, corpus) -> Iterator[tuple[str, dict, Any, str]]:
    """``count`` seeded (response, reference, verifier, label) items, made as they are
    used; a third of the references are drawn fresh, the rest come from the corpus."""
    rng = random.Random(seed)
    fixed, real = corpus
    for _ in range(count):
        if rng.random() < 0.35:
            label, reference = "generated", checked(generated_reference(rng))
        else:
            label, reference = rng.choice(fixed)
        kind, text = response(rng, reference, real)
        yield text, reference, rng.choice(VARIANTS), f"{label}/{kind}"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(2, timeout_s=POOL_TIMEOUT_S) as p:
        yield p


def fuzz(pool: VerifierPool, seed: int, count: int, corpus):
    items = generate(seed, count, corpus)
    summary = run_and_check(lambda: timed_through_pool(pool, items), POOL_TIMEOUT_S, f"ifeval {seed}")
    # every checker is linear in the (tail-capped) response: a timeout here is a hang
    assert summary.statuses["timeout"] == 0, summary.by_label
    return summary


def test_generated_references_cover_every_instruction_id_and_kind(corpus):
    items = list(generate(0, 2000, corpus))
    ids = {i for _, ref, _, _ in items for i in ref["instruction_id_list"]}
    assert ids == set(CHECKS)
    kinds = {label.split("/")[1].removesuffix("+think") for *_, label in items}
    assert kinds == {"boundary", "real", "huge", "binary", "scripts", "many", "json", "empty"}
    assert {label.split("/")[0] for *_, label in items} == {"data", "micro", "generated"}


def test_fuzz_ifeval_slice(pool, corpus):
    summary = fuzz(pool, seed=0, count=250, corpus=corpus)
    assert summary.statuses["correct"] > 0 and summary.statuses["wrong"] > 0


@pytest.mark.slow
def test_fuzz_ifeval_many(pool, corpus):
    summary = fuzz(pool, seed=1, count=MANY, corpus=corpus)
    assert summary.statuses["correct"] > 0 and summary.statuses["wrong"] > 0
