"""The reward bridge: one TRL reward function per domain, backed by the verifier registry.

Each ``reward_<domain>`` returns the verifier's score for rows of its domain and ``None`` for
the others, so TRL logs ``rewards/reward_<domain>/mean`` per domain and a mixed run and a
single-domain run share this code. Verifier infrastructure errors are counted per domain and
abort the run above a configured rate; they are never scored 0 and never returned as ``None``.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.data.agent import rollout_text, score_rollouts
from rlvr.rewards.early import EarlyScores, Key
from rlvr.rewards.parallel import ParallelReward
from verifiers import Status, Verdict

log = logging.getLogger(__name__)

Scorer = Callable[[list[tuple[str, dict, str]]], list[Verdict]]


class VerifierInfrastructureError(RuntimeError):
    """Too many verifier/infrastructure failures: results would be silently wrong."""


@dataclass
class ErrorBudget:
    """Counts infrastructure errors per domain; raises once the rate passes the limit."""

    max_rate: float
    min_samples: int
    seen: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def record(self, domain: str, verdicts: Sequence[Verdict]) -> None:
        self.seen[domain] += len(verdicts)
        bad = [v for v in verdicts if v.status is Status.ERROR]
        self.errors[domain] += len(bad)
        if bad:
            log.warning("%s: %d verifier errors in batch, e.g. %s", domain, len(bad), bad[0].details)
        seen, errors = self.seen[domain], self.errors[domain]
        if seen >= self.min_samples and errors / seen > self.max_rate:
            message = (
                f"{domain}: {errors}/{seen} verifications failed inside the verifier "
                f"(rate {errors / seen:.1%} > trainer.max_infra_error_rate={self.max_rate}); "
                f"last error: {bad[-1].details if bad else 'n/a'}. Fix the verifier or its backend "
                "(e.g. sandbox) before training on these rewards."
            )
            # Hydra reports an exception on stderr only; the run's log must say why it stopped
            log.error("aborting: %s", message)
            raise VerifierInfrastructureError(message)


@dataclass
class StepTimer:
    """Seconds spent scoring, accumulated between log steps (compute accounting): on the
    step's path (``reward_s``), and ahead, overlapped with generation (``ahead_s``)."""

    reward_s: float = 0.0
    ahead_s: float = 0.0


def group_zero_variance_fraction(ids: Sequence[str], scores: Sequence[float]) -> float:
    """Share of prompt groups (same id) whose completions all got the same score."""
    groups: dict[str, list[float]] = defaultdict(list)
    for i, s in zip(ids, scores, strict=True):
        groups[i].append(s)
    full = [g for g in groups.values() if len(g) > 1]
    return sum(max(g) == min(g) for g in full) / len(full) if full else 0.0


def domain_metrics(
    domain: str, verdicts: Sequence[Verdict], lengths: Sequence[int], ids: Sequence[str]
) -> dict[str, float]:
    n = len(verdicts)
    count = lambda status: sum(v.status is status for v in verdicts)  # noqa: E731
    scores = [v.score for v in verdicts]
    return {
        f"{domain}/count": float(n),
        f"{domain}/reward_mean": sum(scores) / n,
        f"{domain}/pass_rate": count(Status.CORRECT) / n,
        f"{domain}/format_error_rate": count(Status.FORMAT_ERROR) / n,
        f"{domain}/timeout_rate": count(Status.TIMEOUT) / n,
        f"{domain}/verifier_error_rate": count(Status.ERROR) / n,
        f"{domain}/completion_length": sum(lengths) / n,
        f"{domain}/zero_variance_group_frac": group_zero_variance_fraction(ids, scores),
    }


class CompletionTable:
    """Collects one batch's verdicts across the domain functions; the last one emits a single
    set of columns (domain, verifier, status, extracted, score) to TRL's completions table."""

    COLUMNS = ("domain", "verifier", "status", "extracted", "score")

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {}

    def fill(self, n: int, rows: list[int], verdicts: Sequence[Verdict], kwargs: dict[str, Any]) -> None:
        if not self.columns or len(self.columns["status"]) != n:
            self.columns = {c: [None] * n for c in self.COLUMNS}
        for i, v in zip(rows, verdicts, strict=True):
            self.columns["domain"][i] = kwargs["domain"][i]
            self.columns["verifier"][i] = kwargs["verifier"][i]
            self.columns["status"][i] = v.status.value
            self.columns["extracted"][i] = v.extracted
            self.columns["score"][i] = v.score

    def flush(self, log_extra: Callable[[str, list], None] | None) -> None:
        if log_extra is not None and self.columns:
            for name, values in self.columns.items():
                log_extra(name, values)
        self.columns = {}


class BatchScores:
    """One TRL batch scored once for every domain of the bridge: the first domain function
    TRL calls grades all rows in one scorer call (sandboxed code and pooled checks at the same
    time), the others read their rows. TRL hands each function the same ``completions`` list
    for a batch, and a new list for the next one, which is how a batch is recognised."""

    def __init__(self, domains: Sequence[str], scorer: Scorer, format_gate: bool, timer: StepTimer) -> None:
        self.domains = set(domains)
        self.scorer = scorer
        self.format_gate = format_gate
        self.timer = timer
        self.completions: Any = None
        self.by_row: dict[int, tuple[tuple[str, dict, str], Verdict]] = {}
        self.early = EarlyScores(scorer, timer)

    def rows(self, domain: str, completions: list, kwargs: dict[str, Any]):
        """(batch positions, items, verdicts) of ``domain``'s rows in this batch."""
        if completions is not self.completions:
            self._score(completions, kwargs)
        rows = [i for i, d in enumerate(kwargs["domain"]) if d == domain]
        return rows, [self.by_row[i][0] for i in rows], [self.by_row[i][1] for i in rows]

    def _score(self, completions: list, kwargs: dict[str, Any]) -> None:
        start = time.perf_counter()
        ahead = self.early.collect()
        rows = [i for i, d in enumerate(kwargs["domain"]) if d in self.domains]
        keys = [(i, rollout_text(completions[i]), kwargs["reference"][i], kwargs["verifier"][i]) for i in rows]
        items = [(text, json.loads(ref), verifier) for _, text, ref, verifier in keys]
        environments = kwargs.get("environments")
        if environments:  # each live episode gives its own verdict; none was scored ahead
            verdicts = score_rollouts(items, rows, environments, self.scorer, self.format_gate)
        else:
            verdicts = self._text_verdicts(keys, items, ahead)
        self.by_row = dict(zip(rows, zip(items, verdicts, strict=True), strict=True))
        self.completions = completions
        self.timer.reward_s += time.perf_counter() - start

    def _text_verdicts(self, keys: list[Key], items: list, ahead: dict[Key, Verdict]) -> list:
        """Rows scored ahead keep their verdicts; of the rest, identical rows (same text,
        reference and verifier: a group's repeated samples) are graded once."""
        first: dict[tuple[str, str, str], int] = {}
        for k, key in enumerate(keys):
            if key not in ahead:
                first.setdefault(key[1:], k)
        scored = self.scorer([items[k] for k in first.values()]) if first else []
        graded = dict(zip(first, scored, strict=True))
        return [ahead[key] if key in ahead else graded[key[1:]] for key in keys]


def make_domain_reward(
    domain: str,
    scores: BatchScores,
    budget: ErrorBudget,
    table: CompletionTable,
    emits_table: bool,
    parallel: ParallelReward | None = None,
) -> Callable[..., list[float | None]]:
    """TRL reward function for one domain (its ``__name__`` is ``reward_<domain>``). Rollouts
    that ran in a tool environment are scored from its final episode, the rest from text.
    With ``parallel`` (``algo.parallel_reward``) the score is its combined reward and
    ``<domain>/parallel/...`` metrics are logged beside the domain's."""

    def reward(prompts, completions, **kwargs) -> list[float | None]:
        rows, items, verdicts = scores.rows(domain, completions, kwargs)
        out: list[float | None] = [None] * len(completions)
        if rows:
            budget.record(domain, verdicts)  # raises above the error rate: nothing is scored as 0
            values = [v.score for v in verdicts]
            if parallel is not None:
                values, extra = parallel.apply(domain, [it[0] for it in items], verdicts)
                _log_values(extra, kwargs)
            for i, score in zip(rows, values, strict=True):
                out[i] = score
            _log_metrics(domain, rows, verdicts, kwargs)
            table.fill(len(completions), rows, verdicts, kwargs)
        if emits_table:
            table.flush(kwargs.get("log_extra"))
        return out

    reward.__name__ = f"reward_{domain}"
    return reward


def _log_metrics(domain: str, rows: list[int], verdicts: Sequence[Verdict], kwargs: dict[str, Any]) -> None:
    """Per-domain metrics through TRL's reward-side ``log_metric`` hook."""
    log_metric = kwargs.get("log_metric")
    if log_metric is None:
        return
    completion_ids = kwargs.get("completion_ids") or []
    lengths = [len(completion_ids[i]) for i in rows] if completion_ids else [0] * len(rows)
    ids = [kwargs["id"][i] for i in rows] if "id" in kwargs else [str(i) for i in rows]
    for name, value in domain_metrics(domain, verdicts, lengths, ids).items():
        log_metric(name, value)


def _log_values(values: dict[str, float], kwargs: dict[str, Any]) -> None:
    log_metric = kwargs.get("log_metric")
    if log_metric is not None:
        for name, value in values.items():
            log_metric(name, value)


def build_reward_functions(
    domains: Sequence[str],
    scorer: Scorer,
    budget: ErrorBudget,
    timer: StepTimer,
    format_gate: bool = False,
    parallel: ParallelReward | None = None,
):
    table = CompletionTable()
    scores = BatchScores(domains, scorer, format_gate, timer)
    last = len(domains) - 1
    functions = [make_domain_reward(d, scores, budget, table, i == last, parallel) for i, d in enumerate(domains)]
    for function in functions:  # where the trainer hands over rows to score ahead
        function.batch_scores = scores
    return functions


def bridge_scores(reward_funcs: Sequence[Any]) -> BatchScores | None:
    """The bridge's batch scores when every reward function is the one bridge's, else None."""
    shared = {getattr(f, "batch_scores", None) for f in reward_funcs}
    return shared.pop() if len(shared) == 1 else None
