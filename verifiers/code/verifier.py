"""Code verifier (``code``): run the extracted program against the reference's tests in the sandbox.

Reference formats (the row's ``reference`` JSON):
- ``{"style": "stdio", "cases": [{"input", "output"}], "float_tol"?}``: one sandboxed run per case;
  stdout matches when, after dropping trailing blank lines, it has the same number of lines and
  every line has the same whitespace-separated tokens (numbers within ``float_tol`` if given).
- ``{"style": "call", "fn_name", "class_name"?, "cases": [{"args", "expected"}]}``: the function
  (or a method of a fresh ``class_name()`` instance) is called with ``args``; its return value
  comes back as JSON and must equal ``expected`` (floats within ``float_tol``, default 1e-6 rel.).
- ``{"style": "assert", "test", "entry_point"?, "setup"?, "prefix"?}``: HumanEval's
  ``check(candidate)`` (with ``entry_point``) or MBPP-style asserts, each top-level assert a test.
  The tests run in a judge process the solution cannot reach, calling into it with plain data
  (``harness`` says what that guarantees and what it does not).
Optional in every style: ``max_tests`` (default: the verifier's; None, its default, runs every
test, a number runs that many sampled with ``seed``) and ``time_limit_s`` (per test). A cap is a
training-reward setting (reward latency: ``domains.code.verifier_options``); evaluation grades
every test, as LiveCodeBench does. A sample's wall budget over all its tests is
``sample_time_limit_s`` (a training reward's latency bound), or, when that is None (evaluation),
LiveCodeBench's rule: (per-test limit + 1 s) x tests + 5 s, so a correct but slow solution of a
problem with a hundred tests is not cut off by a budget sized for twenty. Reward ``all`` (1.0 only when
every test passes, as M2RL) or
``fraction`` (share of tests passed).
"""

from __future__ import annotations

import logging
import random
import secrets
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from verifiers._ast import parse
from verifiers.code.extract import extract_code
from verifiers.code.harness import (
    Unit,
    build_assert_run,
    build_call_program,
    keep_tests,
    parse_results,
    split_assert_tests,
)
from verifiers.code.judge import (
    NOT_RUN,
    Outcome,
    judge_call,
    judge_stdio,
    outcome_from_exec,
    summarise,
)
from verifiers.registry import register
from verifiers.sandbox import SELECTIONS, ExecResult, Limits, get_sandbox
from verifiers.verdict import Verdict, clip

log = logging.getLogger(__name__)

STYLES = ("stdio", "call", "assert")
RESTARTS = 3  # assert style, fraction reward: fresh solution processes after a lost one
REWARDS = ("all", "fraction")
# LiveCodeBench's harness: (timeout + 1) x tests + 5 seconds for one sample's whole run
SLACK_PER_TEST_S, SLACK_SAMPLE_S = 1.0, 5.0


@dataclass(frozen=True)
class CodeVerifier:
    """Options are verifier-wide; per-row settings (tests, limits) live in the reference."""

    name: str = "code"
    sandbox: str = "auto"  # auto | nsjail | bwrap | unshare | rlimit
    workers: int = 0  # 0: one per core, capped at 8
    reward: str = "all"
    max_tests: int | None = None  # None: every test (evaluation); training configs cap it
    seed: int = 0
    test_time_limit_s: float = 5.0
    sample_time_limit_s: float | None = 10.0  # None: scaled by the tests run (evaluation)
    memory_mb: int = 1024
    allow_unfenced: bool = False

    def __post_init__(self) -> None:
        if self.sandbox not in SELECTIONS:  # fail at construction, before any model loads
            raise ValueError(f"code verifier: sandbox must be one of {SELECTIONS}, got {self.sandbox!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"code verifier: reward must be one of {REWARDS}, got {self.reward!r}")
        sample_limit = 1.0 if self.sample_time_limit_s is None else self.sample_time_limit_s
        if (self.max_tests is not None and self.max_tests < 1) or min(self.test_time_limit_s, sample_limit) <= 0:
            raise ValueError("code verifier: max_tests (None for every test) and time limits must be positive")

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        code = extract_code(completion, self.allow_unfenced)
        if code is None or not code.strip():
            return Verdict.format_error("no fenced code block in the completion")
        style = reference.get("style")
        if style not in STYLES:
            return Verdict.error(f"unscorable reference: style {style!r} not in {STYLES}")
        try:
            outcomes = getattr(self, f"_run_{style}")(code, reference)
        except (KeyError, TypeError, ValueError) as exc:
            return Verdict.error(clip(f"unscorable reference ({type(exc).__name__}: {exc})"))
        return self._verdict(code, outcomes)

    def verify_many(self, completions: Sequence[str], references: Sequence[Mapping[str, Any]]) -> list[Verdict]:
        """Score a batch in parallel over the sandbox's workers (same order as the input)."""
        from verifiers.api import verify

        workers = get_sandbox(self.sandbox, self.workers).workers
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda cr: verify(cr[0], cr[1], self), zip(completions, references, strict=True)))

    # -- styles ---------------------------------------------------------------------------

    def _limits(self, wall_s: float) -> Limits:
        wall = max(0.1, wall_s)
        return Limits(cpu_s=wall, wall_s=wall, memory_mb=self.memory_mb)

    def _test_limit(self, reference: Mapping[str, Any]) -> float:
        return float(reference.get("time_limit_s") or self.test_time_limit_s)

    def _sample_budget(self, reference: Mapping[str, Any], tests: int) -> float:
        """Wall seconds for all of a sample's tests (see the module docstring)."""
        if self.sample_time_limit_s is not None:
            return self.sample_time_limit_s
        return (self._test_limit(reference) + SLACK_PER_TEST_S) * max(1, tests) + SLACK_SAMPLE_S

    def _chosen(self, n: int, reference: Mapping[str, Any]) -> list[int]:
        cap = reference.get("max_tests") or self.max_tests
        if cap is None or n <= int(cap):
            return list(range(n))
        return sorted(random.Random(self.seed).sample(range(n), int(cap)))

    def _run_stdio(self, code: str, reference: Mapping[str, Any]) -> list[Outcome]:
        cases = [reference["cases"][i] for i in self._chosen(len(reference["cases"]), reference)]
        tol = reference.get("float_tol")
        budget, outcomes = self._sample_budget(reference, len(cases)), []
        box = get_sandbox(self.sandbox, self.workers)
        for case in cases:
            if budget <= 0:
                outcomes.append(Outcome(False, "timeout", "sample time limit spent"))
                continue
            result = box.run(code, str(case["input"]), self._limits(min(self._test_limit(reference), budget)))
            budget -= result.wall_s
            outcomes.append(judge_stdio(result, str(case["output"]), tol))
            if self.reward == "all" and not outcomes[-1].passed:
                break  # the score is already 0: spare the rest
        return outcomes + [NOT_RUN] * (len(cases) - len(outcomes))

    def _run_call(self, code: str, reference: Mapping[str, Any]) -> list[Outcome]:
        cases = [reference["cases"][i] for i in self._chosen(len(reference["cases"]), reference)]
        target = (str(reference["fn_name"]), reference.get("class_name"))
        args = [list(case["args"]) for case in cases]
        nonce = secrets.token_hex(8)
        program = build_call_program(code, args, target, self._test_limit(reference), nonce)
        records, result = self._execute(program, nonce, self._sample_budget(reference, len(cases)))
        tol = reference.get("float_tol")
        return outcome_from_exec(result) or [
            judge_call(records, i, case["expected"], tol, result) for i, case in enumerate(cases)
        ]

    def _run_assert(self, code: str, reference: Mapping[str, Any]) -> list[Outcome]:
        units = split_assert_tests(str(reference["test"]), reference.get("entry_point"))
        if reference.get("setup"):
            units.insert(0, Unit("setup", str(reference["setup"]), "test setup"))
        n_tests = sum(u.kind == "test" for u in units)
        units = keep_tests(units, self._chosen(n_tests, reference))
        prefix = str(reference.get("prefix") or "")
        solution = join_prefix(prefix, code)
        entry = reference.get("entry_point")
        nonce = secrets.token_hex(8)
        several = sum(u.kind == "test" for u in units) > 1
        restarts = RESTARTS if self.reward == "fraction" and several else 0
        source, prelude, secret = build_assert_run(
            solution, units, prefix, entry, self._test_limit(reference), nonce, restarts
        )
        budget = self._sample_budget(reference, sum(u.kind == "test" for u in units))
        records, result = self._execute(source, nonce, budget, prelude, secret)
        return outcome_from_exec(result) or summarise(records, units, result)

    def _execute(
        self,
        program: str,
        nonce: str,
        budget_s: float,
        prelude: tuple[tuple[str, str], ...] = (),
        secret: bytes = b"",
    ) -> tuple[dict[object, dict], ExecResult]:
        """Run a harness once in the sandbox; the per-unit records and the run's result."""
        result = get_sandbox(self.sandbox, self.workers).run(
            program, "", self._limits(budget_s), secret=secret, prelude=prelude
        )
        return parse_results(result.results, nonce), result

    # -- verdict ----------------------------------------------------------------------------

    def _verdict(self, code: str, outcomes: list[Outcome]) -> Verdict:
        extracted = clip(code, 200)
        infra = [o for o in outcomes if o.kind == "infra"]
        if infra:
            return Verdict.error(clip(f"sandbox failure: {infra[0].detail}"))
        passed = sum(o.passed for o in outcomes)
        total = max(1, len(outcomes))
        if passed == len(outcomes) and outcomes:
            return Verdict.correct(extracted, f"{passed}/{total} tests passed")
        first = next(i for i, o in enumerate(outcomes) if not o.passed)
        bad = outcomes[first]
        detail = clip(f"test {first + 1}/{total} failed: {bad.kind}: {bad.detail}; {passed}/{total} passed")
        score = passed / total if self.reward == "fraction" else 0.0
        if bad.kind == "timeout" and self.reward == "all":
            return Verdict(0.0, Verdict.timeout().status, extracted, detail)
        return Verdict.wrong(extracted, detail, score=score)


def join_prefix(prefix: str, code: str) -> str:
    """Prefix + code (a body completing a HumanEval prompt, or a whole redefinition after it).

    When that does not parse but the code alone does (the model rewrote the whole function
    after a prompt that ends mid-definition), keep only the prefix's import lines.
    """
    joined = prefix + code
    if not prefix or _parses(joined) or not _parses(code):
        return joined
    imports = [ln for ln in prefix.splitlines() if ln.startswith(("import ", "from "))]
    return "\n".join([*imports, code])


def _parses(source: str) -> bool:
    try:
        parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # the parser reports nesting too deep for it as RecursionError or MemoryError
        return False
    return True


register("code", CodeVerifier)
