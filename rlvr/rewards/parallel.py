"""Parallel-reasoning rewards: multi-term combiner over any verifier, and fork-join metrics.

``algo.parallel_reward: {preset, terms, metrics}`` turns it on for every domain. Each
completion is parsed (``verifiers.parallel_format``) and measured in policy-tokenizer tokens:
L_total, L_crit (sequential parts plus the longest thread of each block),
eta = 1 - L_crit / L_total, and the shares of thread tokens. The reward is

    r = correct * s + 1{correct} * ( min(rho * eta, rho_clip)          # ThreadWeaver
                                   - latency * min(L_crit / L_norm, 1)  # Parason: latency
                                   + subtask * S_sub + trial * S_trial ) # Parason: incentives
        - malformed * 1{malformed}

with s the verifier's score (1{correct} for binary verifiers), 1{correct} its status.
- S_sub: share of L_total inside subtask threads; S_trial: share inside trial threads. A
  thread is a trial (an alternative attempt at the same goal) when its outline, after an
  optional ``N:`` number, starts with "try" or "trial"; every other thread is a subtask.
- L_norm: ``terms.latency_norm`` tokens, 0 meaning ``algo.max_completion_length``.
- A malformed structure (unclosed or stray tags, nesting, empty threads, outline/thread
  count mismatch) earns no parallel term: it is measured as sequential (eta 0, shares 0,
  L_crit = L_total); correctness still counts; ``malformed`` subtracts a penalty (default 0).
- Every parallel term is gated on correctness, so speed never pays for a wrong answer.

Presets: ``threadweaver`` (P-GRPO, arXiv 2512.07843: rho 0.5, rho_clip 0.2, mean-centred
advantages, see ``conf/algo/p_grpo.yaml``), ``parason`` (latency 0.2, subtask 0.1,
trial 0.05) and ``none`` (the verifier's score alone); ``terms`` overrides any coefficient.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from verifiers import Verdict
from verifiers.parallel_format import ParallelTrace, parse_parallel


@dataclass(frozen=True)
class RewardTerms:
    """Coefficients of the combined reward (see the module docstring)."""

    correct: float = 1.0
    rho: float = 0.0
    rho_clip: float = 0.0
    latency: float = 0.0
    latency_norm: float = 0.0  # tokens; 0: algo.max_completion_length
    subtask: float = 0.0
    trial: float = 0.0
    malformed: float = 0.0


PRESETS: dict[str, RewardTerms] = {
    "none": RewardTerms(),
    "threadweaver": RewardTerms(rho=0.5, rho_clip=0.2),
    "parason": RewardTerms(latency=0.2, subtask=0.1, trial=0.05),
}
TERM_NAMES = tuple(f.name for f in fields(RewardTerms))
_TRIAL = re.compile(r"^\s*(?:\d+\s*[:.)]\s*)?(?:try|trial)\b", re.IGNORECASE)


class ParallelRewardError(ValueError):
    """An unknown preset or term; the message lists the known ones."""


def reward_terms(preset: str, terms: Mapping[str, Any] | None = None) -> RewardTerms:
    """The preset's coefficients with ``terms`` over them; raises naming the known names."""
    if preset not in PRESETS:
        raise ParallelRewardError(f"algo.parallel_reward.preset={preset!r} is unknown; presets: {', '.join(PRESETS)}")
    unknown = sorted(set(terms or {}) - set(TERM_NAMES))
    if unknown:
        raise ParallelRewardError(f"algo.parallel_reward.terms has unknown {unknown}; terms: {', '.join(TERM_NAMES)}")
    return replace(PRESETS[preset], **{k: float(v) for k, v in (terms or {}).items()})


@dataclass(frozen=True)
class Measured:
    """One completion's structure and lengths, in the counter's unit."""

    trace: ParallelTrace
    total: int
    critical_path: int
    subtask: int  # tokens inside subtask threads
    trial: int  # tokens inside trial threads

    @property
    def eta(self) -> float:
        return 1.0 - self.critical_path / self.total if self.total else 0.0

    @property
    def acceleration(self) -> float:
        return self.total / self.critical_path if self.critical_path else 1.0


def measure(text: str, count: Callable[[str], int] = len) -> Measured:
    """Parse and count one completion (malformed: measured as sequential, no threads)."""
    trace = parse_parallel(text)
    lengths = trace.lengths(count)
    subtask = trial = 0
    if trace.parallel:
        for block in trace.blocks:
            for outline, (a, b) in zip(block.outlines, block.threads, strict=True):
                n = count(trace.text[a:b])
                if _TRIAL.match(outline):
                    trial += n
                else:
                    subtask += n
    return Measured(trace, lengths.total, lengths.critical_path, subtask, trial)


def combine(terms: RewardTerms, verdict: Verdict, m: Measured, latency_norm: float) -> float:
    """The combined reward of one completion (formula in the module docstring)."""
    reward = terms.correct * verdict.score
    if not m.trace.well_formed:
        reward -= terms.malformed
    if not verdict.is_correct:
        return reward
    total = max(m.total, 1)
    reward += min(terms.rho * m.eta, terms.rho_clip)
    norm = terms.latency_norm or latency_norm
    if terms.latency and norm > 0:
        reward -= terms.latency * min(m.critical_path / norm, 1.0)
    return reward + terms.subtask * m.subtask / total + terms.trial * m.trial / total


@dataclass(frozen=True)
class ParallelReward:
    """The configured combiner with the policy tokenizer's count, applied per domain batch."""

    terms: RewardTerms
    count: Callable[[str], int]
    latency_norm: float  # algo.max_completion_length, unless terms.latency_norm is set

    def apply(
        self, domain: str, texts: Sequence[str], verdicts: Sequence[Verdict]
    ) -> tuple[list[float], dict[str, float]]:
        """Combined rewards of a batch and its ``<domain>/parallel/...`` metrics."""
        measured = [measure(t, self.count) for t in texts]
        rewards = [combine(self.terms, v, m, self.latency_norm) for v, m in zip(verdicts, measured, strict=True)]
        bonus = [r - v.score for r, v in zip(rewards, verdicts, strict=True)]
        return rewards, parallel_metrics(domain, measured, bonus)


def parallel_metrics(domain: str, measured: Sequence[Measured], bonus: Sequence[float] = ()) -> dict[str, float]:
    """Means over a batch: lengths, acceleration, and how often blocks are valid/malformed."""
    n = max(len(measured), 1)
    mean = lambda xs: sum(xs) / n  # noqa: E731
    out = {
        f"{domain}/parallel/total_tokens": mean([m.total for m in measured]),
        f"{domain}/parallel/critical_path_tokens": mean([m.critical_path for m in measured]),
        f"{domain}/parallel/acceleration": mean([m.acceleration for m in measured]),
        f"{domain}/parallel/valid_block_rate": mean([m.trace.parallel for m in measured]),
        f"{domain}/parallel/malformed_rate": mean([not m.trace.well_formed for m in measured]),
    }
    if bonus:
        out[f"{domain}/parallel/reward_delta"] = mean(list(bonus))
    return out


def token_counter(tokenizer) -> Callable[[str], int]:
    """Tokens of a piece of text under the policy tokenizer (no special tokens added)."""

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0

    return count


def build_parallel_reward(run, tokenizer) -> ParallelReward | None:
    """The run's combiner, or None when ``algo.parallel_reward`` is off (preset none, no
    metrics): then rewards are the verifiers' scores and no completion is parsed."""
    cfg = run.algo.parallel_reward
    if cfg.preset == "none" and not cfg.metrics and not cfg.terms:
        return None
    terms = reward_terms(cfg.preset, dict(cfg.terms))
    return ParallelReward(terms, token_counter(tokenizer), float(run.algo.max_completion_length))
