"""Fuzz: random and adversarial strings through every math/science verifier via the pool.

Seeded random generation (reproducible, no shrinking needed): empty and whitespace text,
megabyte inputs, binary junk, deep ``\\frac`` and brace nesting, huge written-out numbers,
random unicode and random LaTeX token soup, each also behind ``Answer:`` and ``\\boxed{}``.
Every item must come back as a Verdict within the pool's limit; model output may be wrong,
a format error or a timeout, but never an ``error`` (that would be a verifier bug).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

import pytest

from verifiers import Status, Verdict
from verifiers.pool.pool import VerifierPool

TOKENS = [
    "\\frac",
    "{",
    "}",
    "\\sqrt",
    "^",
    "_",
    "\\boxed{",
    "\\fbox{",
    "Answer:",
    "\\infty",
    "\\pi",
    "\\left(",
    "\\right)",
    "\\begin{pmatrix}",
    "\\end{pmatrix}",
    "&",
    "\\\\",
    "\\text{",
    "=",
    "\\{",
    "\\}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ".",
    "-",
    "+",
    "*",
    "/",
    "\\cdot",
    "\\times",
    "%",
    "\\%",
    "$",
    "x",
    "y",
    "e",
    "i",
    "10",
    "0",
    "9",
    "1.5",
    "E",
    "A",
    "C",
    " or ",
    " ",
    "\n",
    "\\cup",
    "\\le",
    "<",
    "!",
    "\\int",
    "\\sum_{",
    "\\lim",
    "<think>",
    "</think>",
    "\\mathrm{",
]
REFERENCES = {
    "math": [{"answer": "\\frac{1}{2}"}, {"answer": "42"}, {"answer": "[2, 5)"}],
    "science_mcq": [{"answer": "C", "num_options": 4}, {"answer": "J", "num_options": 10}],
    "science_numeric": [{"answer": "9.81", "unit": "m/s^2"}, {"answer": "3e8"}],
}
FUZZED = tuple(REFERENCES)


def _soup(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(TOKENS) for _ in range(n))


def _unicode(rng: random.Random, n: int) -> str:
    ranges = [(0x20, 0x7E), (0x300, 0x36F), (0x590, 0x6FF), (0x4E00, 0x4FFF), (0x1F600, 0x1F64F)]
    chars = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        chars.append(chr(rng.randint(lo, hi)))
    return "".join(chars)


def _junk(rng: random.Random, n: int) -> str:
    return bytes(rng.getrandbits(8) for _ in range(n)).decode("utf-8", errors="replace")


def adversarial() -> list[str]:
    """Fixed hostile inputs (each built cheaply: no 9**999999 arithmetic needed)."""
    mb = 1_000_000
    digits = "9" * 954_243  # the length of 9**999999 written out
    return [
        "",
        " ",
        "\n" * 1000,
        "\x00" * 100,
        "Answer:",
        "\\boxed{",
        "\\boxed{}",
        "\\boxed{{}}",
        "a" * mb,
        "\\boxed{" * 50_000,
        "{" * mb,
        "}" * mb,
        "Answer: " + "(" * 100_000,
        "\\boxed{" + digits + "}",
        "Answer: " + digits,
        digits,
        "Answer: 1e99999",
        "-" * mb,
        "\\boxed{" + "\\frac{" * 500 + "1" + "}{2}" * 500 + "}",
        "\\boxed{" + "\\frac{1}{" * 40 + "2" + "}" * 40 + "}",
        "\\boxed{" + "{" * 10_000 + "1" + "}" * 10_000 + "}",
        "\\boxed{" + "\\sqrt{" * 200 + "2" + "}" * 201,
        "\\boxed{10^{10^{10^{10}}}}",
        "\\boxed{9^{9^{9^{9}}}}",
        "\\boxed{(10^{100})!}",
        "\\boxed{" + "+".join(["x"] * 2000) + "}",
        "Answer: " + " or ".join("ABCDEFGHIJ" * 500),
        "<think>" * 10_000,
        "</think>" * 10_000,
        "Answer: \\boxed{" + "A, " * 10_000 + "}",
        "\\begin{pmatrix}" + "1&" * 5000 + "\\end{pmatrix}",
        "Answer: 1" + "0" * 400 + " m/s",
        "\\boxed{\\frac{1}{0}}",
        "\\boxed{0^0}",
        "\\boxed{\\infty - \\infty}",
        "\\boxed{nan}",
    ]


def random_strings(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    makers: list[Callable[[], str]] = [
        lambda: _soup(rng, rng.randint(1, 60)),
        lambda: "\\boxed{" + _soup(rng, rng.randint(1, 30)) + "}",
        lambda: "Answer: " + _soup(rng, rng.randint(1, 20)),
        lambda: _unicode(rng, rng.randint(1, 300)),
        lambda: _junk(rng, rng.randint(1, 500)),
        lambda: "Answer: " + _unicode(rng, rng.randint(1, 20)),
        lambda: (
            f"Answer: {rng.uniform(-1e12, 1e12):.{rng.randint(0, 12)}g} {rng.choice(['m', 'kg', 'm/s^2', '%', ''])}"
        ),
    ]
    return [rng.choice(makers)() for _ in range(count)]


def run_fuzz(pool: VerifierPool, texts: list[str], timeout_s: float) -> Counter:
    items = [(text, refs[i % len(refs)], name) for name, refs in REFERENCES.items() for i, text in enumerate(texts)]
    start = time.monotonic()
    verdicts = pool.verify_batch(items, timeout_s=timeout_s)
    elapsed = time.monotonic() - start
    assert len(verdicts) == len(items)
    bad = [(items[i][2], items[i][0][:80], v) for i, v in enumerate(verdicts) if not _ok(v)]
    assert not bad, bad[:5]
    # every item came back within its limit; the batch as a whole is bounded accordingly
    assert elapsed < timeout_s * (1 + sum(v.status is Status.TIMEOUT for v in verdicts)) + 60
    return Counter(f"{items[i][2]}:{v.status.value}" for i, v in enumerate(verdicts))


def _ok(verdict: Verdict) -> bool:
    return (
        isinstance(verdict, Verdict)
        and verdict.status is not Status.ERROR
        and 0.0 <= verdict.score <= 1.0
        and len(verdict.details) <= 500
    )


@pytest.fixture(scope="module")
def pool() -> VerifierPool:
    with VerifierPool(2, timeout_s=5.0) as p:
        yield p


def test_adversarial_inputs(pool: VerifierPool) -> None:
    counts = run_fuzz(pool, adversarial(), timeout_s=5.0)
    print("\nadversarial:", dict(sorted(counts.items())))


def test_random_inputs(pool: VerifierPool) -> None:
    counts = run_fuzz(pool, random_strings(seed=0, count=1000), timeout_s=5.0)
    print("\nrandom:", dict(sorted(counts.items())))
    assert sum(n for k, n in counts.items() if k.endswith("timeout")) <= 5


@pytest.mark.slow
def test_random_inputs_many_seeds(pool: VerifierPool) -> None:
    for seed in range(1, 11):  # 10,000 generated inputs through each verifier
        counts = run_fuzz(pool, random_strings(seed=seed, count=1000), timeout_s=5.0)
        assert sum(n for k, n in counts.items() if k.endswith("timeout")) <= 10
