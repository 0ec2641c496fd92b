"""The in-run held-out evaluation's token cap: whole sets when they fit, else an even share
of rows per domain within ``eval.in_run_token_budget``; and per-row results summarise to
the same metrics however the rows are split over ranks."""

from __future__ import annotations

import random

import pytest

from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.heldout import RowScores, cap_to_token_budget, summarise_rows


def rows(counts: dict[str, int]) -> list[dict]:
    return [{"domain": d, "id": f"{d}-{i}"} for d, n in counts.items() for i in range(n)]


def test_rows_that_fit_are_all_kept_in_order():
    held = rows({"math": 3, "code": 2})
    decoding = Decoding(k=4, max_new_tokens=10)
    assert cap_to_token_budget(held, decoding, True, budget=5 * 5 * 10) == held


def test_a_cap_shares_rows_evenly_across_domains(caplog):
    held = rows({"math": 10, "code": 10, "agent": 1})
    decoding = Decoding(k=7, max_new_tokens=100)  # 800 tokens a row with greedy
    kept = cap_to_token_budget(held, decoding, True, budget=7 * 800 + 799)
    assert len(kept) == 7
    domains = [r["domain"] for r in kept]
    assert domains.count("agent") == 1 and domains.count("math") == 3 and domains.count("code") == 3
    assert "capped to 7 of 21 rows" in caplog.text


def test_a_budget_below_one_row_keeps_one():
    held = rows({"math": 4})
    assert len(cap_to_token_budget(held, Decoding(k=8, max_new_tokens=512), False, budget=1)) == 1


def test_summaries_do_not_depend_on_how_rows_are_split_over_ranks():
    rng = random.Random(0)
    results = [
        RowScores(
            domain=rng.choice(["math", "code"]),
            scores=tuple(float(rng.random() < 0.4) for _ in range(4)),
            correct=0,
            greedy=float(rng.random() < 0.5),
        )
        for _ in range(23)
    ]
    results = [RowScores(r.domain, r.scores, int(sum(r.scores)), r.greedy) for r in results]
    whole = summarise_rows(results, 4)
    split = summarise_rows([*results[1::3], *results[0::3], *results[2::3]], 4)
    for domain in whole:
        for key, value in whole[domain].items():
            assert split[domain][key] == pytest.approx(value)
    assert sum(m["prompts"] for m in whole.values()) == 23
