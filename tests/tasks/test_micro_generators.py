"""Micro-suite generators: determinism, canonical rows, disjoint splits, length budgets."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tasks.micro import MICRO_DOMAINS, demonstration, generate, levels
from tasks.schema import COLUMNS, DOMAINS

VERIFIER = {"math": "math", "code": "code", "science": "science_mcq", "instruction": "ifeval"}
PROMPT_BUDGET = 64  # characters; the tiny model's context is a few hundred characters
DEMO_BUDGET = 64
MEAN_BUDGET = 60

ALL_LEVELS = [(d, lv) for d in MICRO_DOMAINS for lv in levels(d)]


def text(row) -> str:
    return row["prompt"][-1]["content"]


def base_id(row) -> str:
    return re.sub(r"-r\d+$", "", row["id"])  # repeats of one problem share the base id


@pytest.mark.parametrize("domain", MICRO_DOMAINS)
def test_deterministic_by_seed(domain):
    first = generate(domain, 60, seed=5)
    assert first == generate(domain, 60, seed=5)
    assert first != generate(domain, 60, seed=6)


@pytest.mark.parametrize("domain", MICRO_DOMAINS)
@pytest.mark.parametrize("split", ["train", "heldout"])
def test_rows_are_canonical(domain, split):
    rows = generate(domain, 80, seed=1, split=split)
    assert len(rows) == 80
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert tuple(row) == COLUMNS
        assert row["domain"] == domain and row["domain"] in DOMAINS
        assert row["verifier"] == VERIFIER[domain]
        assert row["source"] == f"micro/{domain}/{split}"
        assert row["environment"] == ""
        assert row["id"].startswith(f"micro-{domain}-d")
        assert [m["role"] for m in row["prompt"]] == ["user"]
        assert isinstance(json.loads(row["reference"]), dict)


@pytest.mark.parametrize(("domain", "level"), ALL_LEVELS)
def test_train_and_heldout_never_share_id_or_prompt(domain, level):
    train = [r for s in range(3) for r in generate(domain, 300, s, level, "train")]
    held = [r for s in range(3) for r in generate(domain, 300, s, level, "heldout")]
    assert held and train
    assert not {base_id(r) for r in train} & {base_id(r) for r in held}
    assert not {text(r) for r in train} & {text(r) for r in held}


@pytest.mark.parametrize("domain", MICRO_DOMAINS)
def test_difficulty_selects_levels_evenly(domain):
    all_levels = levels(domain)
    rows = generate(domain, 10 * len(all_levels), seed=0)
    counts = Counter(re.match(r"micro-\w+-d(\d+)-", r["id"]).group(1) for r in rows)
    assert counts == {str(lv): 10 for lv in all_levels}
    only = generate(domain, 12, seed=0, difficulty=all_levels[-1])
    assert {r["id"].split("-")[2] for r in only} == {f"d{all_levels[-1]}"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"domain": "chemistry"}, "no micro-suite generator"),
        ({"domain": "math", "difficulty": 99}, "unknown difficulty"),
        ({"domain": "math", "split": "test"}, "unknown split"),
    ],
)
def test_bad_requests_name_the_fix(kwargs, message):
    args = {"n": 4, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        generate(**args)


@pytest.mark.parametrize(("domain", "level"), ALL_LEVELS)
def test_lengths_within_budget(domain, level):
    rows = generate(domain, 200, 0, level) + generate(domain, 50, 0, level, "heldout")
    prompts = [len(text(r)) for r in rows]
    demos = [len(demonstration(r)) for r in rows]
    assert max(prompts) <= PROMPT_BUDGET and max(demos) <= DEMO_BUDGET
    assert sum(prompts) / len(rows) <= MEAN_BUDGET and sum(demos) / len(rows) <= MEAN_BUDGET


@pytest.mark.parametrize("domain", MICRO_DOMAINS)
def test_demonstrations_have_short_think_then_answer(domain):
    for row in generate(domain, 40, seed=2):
        demo = demonstration(row)
        match = re.fullmatch(r"<think>([^<]{1,30})</think>\n(.+)", demo, re.DOTALL)
        assert match, demo


def test_science_options_are_shuffled_by_seed():
    letters = Counter(json.loads(r["reference"])["answer"] for r in generate("science", 400, 3, difficulty=3))
    assert set(letters) == set("ABCD")
    assert min(letters.values()) > 60  # roughly uniform: no letter shortcut to learn
