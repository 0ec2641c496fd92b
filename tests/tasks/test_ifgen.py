"""Generated instruction-following rows: valid references, no benchmark text, content checked."""

from __future__ import annotations

import json
import re

import pytest

from tasks.ifgen.base_prompts import GENRES, TOPICS
from tasks.ifgen.constraints import FAMILIES, draw_constraints
from tasks.ifgen.rows import base_requests, generate
from tasks.registry import load_task_rows
from tests._requirements import needs_shared_data, shared_data
from verifiers.ifeval import parse_reference
from verifiers.ifeval.verifier import IFEvalVerifier

SHINGLE = 8  # words: longer than a stock phrase ("what are the advantages and disadvantages of")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _user(row) -> str:
    return row["prompt"][-1]["content"]


@pytest.fixture(scope="module")
def train_rows():
    return load_task_rows("ifgen", limit=3000, seed=0)


@needs_shared_data("instruction_following")
def test_no_ifeval_or_ifbench_text_enters_training(train_rows):
    folder = shared_data("instruction_following")
    benchmark: set[tuple[str, ...]] = set()
    for name in ("ifeval_input_data.jsonl", "IFBench_test.jsonl"):
        for line in (folder / name).read_text().splitlines():
            benchmark |= _shingles(json.loads(line)["prompt"])
    assert len(benchmark) > 10_000  # both files were read
    texts = [_user(r) for r in train_rows] + [g.template.format(topic=t.phrase) for g in GENRES for t in TOPICS]
    shared = {s for text in texts for s in _shingles(text) & benchmark}
    assert not shared, f"benchmark word sequences in training prompts: {sorted(shared)[:5]}"


def test_every_reference_binds_and_carries_the_content_check(train_rows):
    assert len(train_rows) >= 2900
    for row in train_rows:
        reference = json.loads(row["reference"])
        instructions = parse_reference(reference)
        assert 2 <= len(instructions) <= 4
        assert instructions[-1].instruction_id == "content:addresses_prompt"


def test_constraint_families_in_one_prompt_never_contradict():
    import random

    rng = random.Random(0)
    for _ in range(2000):
        drawn = draw_constraints(rng, "Write a poem about tea.", 3)
        assert len(drawn) == 3
        for i, (a, _) in enumerate(drawn):
            for b, _ in drawn[i + 1 :]:
                assert not (a.groups & b.groups), (a.name, b.name)
    assert {f.name for f in FAMILIES} >= {"lowercase", "max_words", "postscript", "repeat"}


def test_heldout_requests_never_appear_in_training():
    train = {(g.template, t.phrase) for g, t in base_requests("train")}
    test = {(g.template, t.phrase) for g, t in base_requests("test")}
    assert test and train and not train & test
    assert len(test) / (len(train) + len(test)) == pytest.approx(0.10, abs=0.03)

    def requests(rows):
        return {json.loads(r["reference"])["request"] for r in rows}

    heldout = requests(load_task_rows("ifgen_heldout", limit=300, seed=0))
    assert len(heldout) > 100 and not heldout & requests(load_task_rows("ifgen", limit=3000))


def test_rows_are_deterministic_by_seed():
    first = [r["prompt"] for r in generate(50, seed=3)]
    assert first == [r["prompt"] for r in generate(50, seed=3)]
    assert first != [r["prompt"] for r in generate(50, seed=4)]


LOWERCASE_ROW = {
    "instruction_id_list": ["change_case:english_lowercase", "content:addresses_prompt"],
    "kwargs": [{}, {"topic_words": ["volcan", "lava"], "min_words": 20}],
}
ON_TOPIC = (
    "volcanoes form where magma rises through the crust. when pressure builds, lava and ash "
    "burst out, and the eruption can reshape the land around the mountain for many years."
)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("ok", 0.0),  # follows the case constraint, says nothing
        ("lava " * 3, 0.0),  # on topic, too short
        (("the weather is mild today and the garden is green. " * 4), 0.0),  # long, off topic
        (ON_TOPIC.upper(), 0.0),  # on topic, breaks the stated constraint
        (ON_TOPIC, 1.0),
    ],
)
def test_degenerate_answers_earn_nothing(completion, expected):
    assert IFEvalVerifier().verify(completion, LOWERCASE_ROW).score == expected


def test_content_check_rejects_a_reference_without_topic_words():
    bad = {"instruction_id_list": ["content:addresses_prompt"], "kwargs": [{"topic_words": []}]}
    verdict = IFEvalVerifier().verify(ON_TOPIC, bad)
    assert verdict.status.value == "error"
