"""Per-instruction tables: a followed and a broken response for each of the 25 IFEval ids."""

from __future__ import annotations

import pytest

from verifiers.ifeval import evaluate_response
from verifiers.ifeval.suites import SUITES

LONG_EN = "Please write to me when you have time. I would like to hear about your trip and your family."

# (instruction id, kwargs, response, followed?)
CASES: list[tuple[str, dict, str, bool]] = [
    ("keywords:existence", {"keywords": ["Paris", "wine"]}, "In paris we drank WINE.", True),
    ("keywords:existence", {"keywords": ["Paris", "wine"]}, "In Paris we drank beer.", False),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "Cat and cat.",
        True,
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "One cat.",
        False,
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "less than"},
        "One cat.",
        True,
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "less than"},
        "cat cat",
        False,
    ),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "A badge is fine.", True),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "That was BAD.", False),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 3, "let_relation": "at least"},
        "Zig zag zoo",
        True,
    ),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 3, "let_relation": "at least"},
        "Zig zag",
        False,
    ),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 3, "let_relation": "less than"},
        "Zig zag",
        True,
    ),
    (
        "language:response_language",
        {"language": "de"},
        "Ich habe heute keine Zeit, weil ich arbeiten muss und der Zug spät ist.",
        True,
    ),
    ("language:response_language", {"language": "de"}, LONG_EN, False),
    ("language:response_language", {"language": "de"}, "1234 5678 !!!", True),  # no features
    ("change_case:english_lowercase", {}, LONG_EN.lower(), True),
    ("change_case:english_lowercase", {}, LONG_EN, False),
    (
        "change_case:english_lowercase",
        {},
        "ich habe heute keine zeit, weil ich arbeiten muss und der zug spät ist.",
        False,
    ),
    ("change_case:english_capital", {}, LONG_EN.upper(), True),
    ("change_case:english_capital", {}, LONG_EN, False),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 3, "capital_relation": "at least"},
        "I LOVE NASA and you.",
        True,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 3, "capital_relation": "at least"},
        "I love NASA.",
        False,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "less than"},
        "I love Nasa.",
        True,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "less than"},
        "DON'T go.",
        False,
    ),
    ("punctuation:no_comma", {}, "No commas here.", True),
    ("punctuation:no_comma", {}, "Well, a comma.", False),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        'Done. "any other questions?"  ',
        True,
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "Any other questions? Bye.",
        False,
    ),
    ("startend:quotation", {}, '  "All quoted."\n', True),
    ("startend:quotation", {}, '"Half quoted.', False),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "One. Dr. Who came.",
        True,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "One. Two? Three.",
        False,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "at least"},
        "One. Two? Three.",
        True,
    ),
    (
        "length_constraints:number_words",
        {"num_words": 5, "relation": "at least"},
        "one two-three four five",
        True,
    ),
    (
        "length_constraints:number_words",
        {"num_words": 5, "relation": "at least"},
        "one two three four",
        False,
    ),
    (
        "length_constraints:number_words",
        {"num_words": 5, "relation": "less than"},
        "one two three four",
        True,
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First part.\n***\nSecond part.",
        True,
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First.\n***\n\n***\nSecond.",
        False,
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 3},
        "First part.\n***\nSecond part.",
        False,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First.\n\n'Then, later.",
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First.\n\nLater then.",
        False,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First.\n\nThen.\n\nMore.",
        False,
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Dear [name], at [address].",
        True,
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Dear [name], at [addr\ness].",
        False,
    ),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.S."},
        "Hello.\n\np.s. see you",
        True,
    ),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hello.\n\nPS see you", False),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Hi.\nP. P.S. more", True),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Hi.\nP.S. more", False),
    ("detectable_format:constrained_response", {}, "My answer is maybe.", True),
    ("detectable_format:constrained_response", {}, "My answer is perhaps.", False),
    ("detectable_format:json_format", {}, '```json\n{"a": [1, 2]}\n```', True),
    ("detectable_format:json_format", {}, 'Here: {"a": 1}', False),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nA\nSECTION 2\nB",
        True,
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nA\nSection 2\nB",
        False,
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 3},
        "Intro\n* one\n  - two\n* three",
        True,
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 3},
        "Intro\n* one\n**bold**\n* three",
        False,
    ),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*one* and **two**",
        True,
    ),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*one* and * * and *x\ny*",
        False,
    ),
    ("detectable_format:title", {}, "<<My Title>>\nBody", True),
    ("detectable_format:title", {}, "<<  >>\n<<broken\n>>", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "say HI. Hi!", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Hi! Say hi.", False),
    ("combination:two_responses", {}, "Answer one.\n******\nAnswer two.", True),
    ("combination:two_responses", {}, "Same.\n******\nSame.", False),
    ("combination:two_responses", {}, "A\n******\n\n******\nB", False),
]


def _reference(instruction_id: str, kwargs: dict) -> dict:
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs], "prompt": ""}


@pytest.mark.parametrize(("instruction_id", "kwargs", "response", "expected"), CASES)
def test_instruction_table(instruction_id: str, kwargs: dict, response: str, expected: bool):
    assert evaluate_response(response, _reference(instruction_id, kwargs)) == [expected]


def test_table_covers_every_instruction_both_ways():
    outcomes = {(i, expected) for i, _, _, expected in CASES}
    assert len(SUITES["ifeval"]) == 25
    assert outcomes == {(i, e) for i in SUITES["ifeval"] for e in (True, False)}


@pytest.mark.parametrize(
    ("response", "loose_expected"),
    [
        ('Sure, here you go:\n"quoted"', True),  # preamble line dropped
        ('"quoted"\nHope this helps!', True),  # sign-off line dropped
        ('*"quoted"*', True),  # markdown emphasis removed
        ('Line one\n"quoted" in the middle\nline three', False),
    ],
)
def test_loose_mode_accepts_variants(response: str, loose_expected: bool):
    reference = _reference("startend:quotation", {})
    assert evaluate_response(response, reference, loose=False) == [False]
    assert evaluate_response(response, reference, loose=True) == [loose_expected]


def test_empty_response_follows_nothing_even_no_comma():
    reference = _reference("punctuation:no_comma", {})
    assert evaluate_response("   ", reference) == [False]
    assert evaluate_response("   ", reference, loose=True) == [False]
