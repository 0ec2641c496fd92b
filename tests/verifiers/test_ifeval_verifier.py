"""The registered ``ifeval`` verifier: modes, reward shapes, bad references, hostile input."""

from __future__ import annotations

import json
import pickle
import random
import time

import pytest

from verifiers import Status, get_verifier, verify
from verifiers.ifeval import IFEvalVerifier, accuracy, unsupported_instructions

REFERENCE = {
    "instruction_id_list": ["punctuation:no_comma", "startend:quotation", "keywords:existence"],
    "kwargs": [{}, {}, {"keywords": ["tea"]}],
    "prompt": "Wrap your answer in quotes, mention tea, and use no commas.",
}

GATED = {"reward": "fraction", "gate": ["keywords:existence"]}
# (options, completion, status, score, failed ids named in details)
CASES = [
    ({}, '"I like tea."', Status.CORRECT, 1.0, []),
    ({}, '"I like tea, really."', Status.WRONG, 0.0, ["punctuation:no_comma"]),
    (
        {"reward": "fraction"},
        '"I like coffee, really."',
        Status.WRONG,
        1 / 3,
        ["no_comma", "existence"],
    ),
    ({"reward": "fraction"}, '"Tea."', Status.CORRECT, 1.0, []),
    ({}, 'Sure thing:\n"I like tea."', Status.WRONG, 0.0, ["startend:quotation"]),
    ({"mode": "loose"}, 'Sure thing:\n"I like tea."', Status.CORRECT, 1.0, []),
    ({"mode": "loose", "reward": "fraction"}, "tea", Status.WRONG, 2 / 3, ["quotation"]),
    ({}, "", Status.WRONG, 0.0, ["no_comma", "quotation", "existence"]),
    # a gate: no partial credit unless the gating instruction is followed
    (GATED, '"I like coffee, really."', Status.WRONG, 0.0, ["no_comma", "existence"]),
    (GATED, '"I like tea, really."', Status.WRONG, 2 / 3, ["no_comma"]),
    (GATED, '"I like tea."', Status.CORRECT, 1.0, []),
    (
        {"reward": "fraction", "gate": ["detectable_format:title"]},
        '"coffee,"',
        Status.WRONG,
        1 / 3,
        ["existence"],
    ),  # a gate the reference does not list gates nothing
]


@pytest.mark.parametrize(("options", "completion", "status", "score", "failed"), CASES)
def test_verdicts(options: dict, completion: str, status: Status, score: float, failed: list):
    verdict = get_verifier("ifeval", **options).verify(completion, REFERENCE)
    assert verdict.status is status
    assert verdict.score == pytest.approx(score)
    for name in failed:
        assert name in verdict.details
    if status is Status.CORRECT:
        assert "not followed" not in verdict.details


def test_reference_as_json_string_and_null_kwargs_are_accepted():
    reference = {
        "instruction_id_list": ["length_constraints:number_words"],
        "kwargs": [{"num_words": 3, "relation": "less than", "keywords": None, "language": None}],
    }
    verifier = IFEvalVerifier()
    assert verifier.verify("two words", json.dumps(reference)).status is Status.CORRECT
    assert verifier.verify("one two three", reference).status is Status.WRONG


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (
            {"instruction_id_list": ["count:word_range"], "kwargs": [{}]},
            "unsupported instruction id",
        ),
        ({"instruction_id_list": ["keywords:frequency"], "kwargs": [{"keyword": "a"}]}, "missing"),
        (
            {
                "instruction_id_list": ["length_constraints:number_words"],
                "kwargs": [{"num_words": 3, "relation": "at most"}],
            },
            "relation",
        ),
        ({"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{"x": 1}]}, "unexpected"),
        (
            {"instruction_id_list": ["punctuation:no_comma", "startend:quotation"], "kwargs": [{}]},
            "one entry",
        ),
        (
            {
                "instruction_id_list": ["length_constraints:number_words"],
                "kwargs": [{"num_words": -1, "relation": "at least"}],
            },
            "num_words=-1 must not be negative",
        ),
        (
            {
                "instruction_id_list": ["length_constraints:number_sentences"],
                "kwargs": [{"num_sentences": "-3", "relation": "less than"}],
            },
            "must not be negative",
        ),
        (
            {
                "instruction_id_list": ["length_constraints:nth_paragraph_first_word"],
                "kwargs": [{"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "so"}],
            },
            "nth_paragraph=3",
        ),
        (
            {"instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": [" "]}]},
            "is not",
        ),
        ({"instruction_id_list": []}, "no instructions"),
        ({"kwargs": []}, "instruction_id_list"),
        ("not json", "not JSON"),
    ],
)
def test_unscorable_references_are_errors_never_scores(reference, message: str):
    verdict = IFEvalVerifier().verify("any response", reference)
    assert verdict.status is Status.ERROR
    assert message in verdict.details


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "completion"),
    [
        ("keywords:existence", {"keywords": [" tea ", "milk\n"]}, "Tea with milk."),
        (
            "keywords:frequency",
            {"keyword": " tea ", "frequency": 2, "relation": "at least"},
            "tea, TEA",
        ),
        ("keywords:forbidden_words", {"forbidden_words": [" coffee "]}, "Tea, not coffee."),
        (
            "detectable_format:multiple_sections",
            {"section_spliter": " Part ", "num_sections": 2},
            "Part 1 a\nPart 2 b",
        ),
    ],
)
def test_padded_arguments_mean_the_trimmed_phrase(instruction_id: str, kwargs: dict, completion: str):
    reference = {"instruction_id_list": [instruction_id], "kwargs": [kwargs]}
    expected = Status.WRONG if "forbidden" in instruction_id else Status.CORRECT
    assert IFEvalVerifier().verify(completion, reference).status is expected


def test_unsupported_instructions_are_counted_per_id():
    references = [
        {"instruction_id_list": ["punctuation:no_comma", "count:word_range"]},
        json.dumps({"instruction_id_list": ["count:word_range", "new:thing"]}),
        REFERENCE,
    ]
    assert unsupported_instructions(references) == {"count:word_range": 2, "new:thing": 1}


def test_bad_options_fail_fast():
    with pytest.raises(ValueError, match="mode"):
        get_verifier("ifeval", mode="lenient")
    with pytest.raises(ValueError, match="reward"):
        get_verifier("ifeval", reward="half")
    with pytest.raises(ValueError, match="gate"):
        get_verifier("ifeval", gate="keywords:existence")  # one id, not a list of them


def test_verifier_is_picklable_and_goes_through_the_common_api():
    verifier = pickle.loads(pickle.dumps(IFEvalVerifier(mode="loose", reward="fraction")))
    assert verifier == IFEvalVerifier(mode="loose", reward="fraction")
    verdict = verify('<think>hmm, ok</think>"I like tea."', REFERENCE, "ifeval")
    assert verdict.status is Status.CORRECT


def test_accuracy_aggregates_prompt_and_instruction_level():
    result = accuracy([[True, True], [True, False, False], [True]])
    assert (result.prompts_followed, result.prompts) == (2, 3)
    assert (result.instructions_followed, result.instructions) == (4, 6)
    assert result.prompt_level == pytest.approx(2 / 3)


ALL_INSTRUCTIONS = {
    "instruction_id_list": [
        "language:response_language",
        "change_case:english_capital",
        "change_case:capital_word_frequency",
        "length_constraints:number_sentences",
        "length_constraints:number_words",
        "length_constraints:nth_paragraph_first_word",
        "detectable_content:number_placeholders",
        "detectable_content:postscript",
        "detectable_format:title",
        "detectable_format:number_bullet_lists",
        "detectable_format:number_highlighted_sections",
        "detectable_format:json_format",
        "detectable_format:multiple_sections",
        "length_constraints:number_paragraphs",
        "combination:two_responses",
    ],
    "kwargs": [
        {"language": "en"},
        {},
        {"capital_frequency": 3, "capital_relation": "at least"},
        {"num_sentences": 3, "relation": "at least"},
        {"num_words": 3, "relation": "at least"},
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "a"},
        {"num_placeholders": 1},
        {"postscript_marker": "P.P.S"},
        {},
        {"num_bullets": 1},
        {"num_highlights": 1},
        {},
        {"section_spliter": "Section", "num_sections": 1},
        {"num_paragraphs": 1},
        {},
    ],
}

HOSTILE = {
    "empty": "",
    "binary": bytes(range(256)).decode("latin-1") * 2000,
    "brackets": "[" * 1_000_000,
    "angles": "<<" * 500_000,
    "stars": "*" * 1_000_000,
    "spaces": " " * 1_000_000 + "p",
    "newlines": "\n" * 1_000_000,
    "json_nesting": "[" * 200_000 + "]" * 200_000,
    "dots": ". " * 150_000,
    "words": "WORD. " * 50_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_completions_return_a_verdict_in_bounded_time(name: str):
    verifier = IFEvalVerifier(mode="loose")  # loose checks eight variants: the costliest mode
    started = time.perf_counter()
    verdict = verifier.verify(HOSTILE[name], ALL_INSTRUCTIONS)
    assert verdict.status in (Status.CORRECT, Status.WRONG)
    assert time.perf_counter() - started < 30.0  # hang detection (backtracking would be minutes)


def test_random_strings_always_score():
    rng = random.Random(0)
    alphabet = "ab AB.,!?*-#\n\"'[]<>{}:0123456789éß中"
    verifier = IFEvalVerifier(reward="fraction")  # strict: langdetect (~20 ms) runs once each
    for _ in range(150):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200)))
        verdict = verifier.verify(text, ALL_INSTRUCTIONS)
        assert verdict.status in (Status.CORRECT, Status.WRONG)
        assert 0.0 <= verdict.score <= 1.0
