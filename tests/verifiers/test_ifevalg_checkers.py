"""Per-instruction tables: a followed and a broken response for each of IFEvalG's 29 added ids.

IFEvalG's added checkers never had upstream tests, so these cases are ours, written from
the semantics of open-instruct's ``IFEvalG/instructions.py`` (quirks included, noted).
"""

from __future__ import annotations

import pytest

from verifiers.ifeval import evaluate_response
from verifiers.ifeval.suites import SUITES

PROMPT = "Write a poem about the sea."
CASES = [
    (
        "copy:repeat_phrase",
        {"phrase": "the quick brown fox", "small_n": 2},
        "the quick red fox and the slow brown fox",
        True,
    ),
    (
        "copy:repeat_phrase",
        {"phrase": "the quick brown fox", "small_n": 2},
        "the quick brown fox and the slow brown fox",
        False,
    ),  # the first copy is unchanged
    ("copy:copy", {"prompt_to_repeat": PROMPT}, " write a poem about the sea. ", True),
    ("copy:copy", {"prompt_to_repeat": PROMPT}, "Write a poem about the sea. Waves!", False),
    ("copy:copying_simple", {"prompt_to_repeat": PROMPT}, PROMPT, True),
    ("copy:copying_simple", {"prompt_to_repeat": PROMPT}, "Sure. " + PROMPT, False),
    ("copy:copying_multiple", {"prompt_to_repeat": PROMPT, "N": 2}, f"{PROMPT}\n******\n{PROMPT}", True),
    ("copy:copying_multiple", {"prompt_to_repeat": PROMPT, "N": 3}, f"{PROMPT}\n******\n{PROMPT}", False),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 8, "n_end": 12}, "poem", True),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 8, "n_end": 11}, "poem", False),
    ("detectable_format:sentence_hyphens", {}, "I like tea.-It is hot.-We drink it.", True),
    ("detectable_format:sentence_hyphens", {}, "I like tea. - It is hot.", False),
    ("detectable_format:square_brackets", {}, "[every] [word] [wrapped]", True),
    ("detectable_format:square_brackets", {}, "[every] word [wrapped]", False),
    ("detectable_format:bigram_wrapping", {}, "<<I am>> <<at home>>", True),
    ("detectable_format:bigram_wrapping", {}, "<<I am>> at home", False),
    ("keywords:no_adjacent_consecutive", {}, "dogs eat fish", False),  # d then e
    ("keywords:no_adjacent_consecutive", {}, "dogs fish eat", True),
    ("keywords:word_once", {"keyword": "tea"}, "I drink TEA daily.", True),
    ("keywords:word_once", {"keyword": "tea"}, "Tea, more tea.", False),
    (
        "keywords:word_count_different_numbers",
        {"keyword": "sea", "frequency": 2, "relation": "at least"},
        "The sea. The sea again.",
        True,
    ),
    (
        "keywords:word_count_different_numbers",
        {"keyword": "sea", "frequency": 2, "relation": "less than"},
        "The sea. The sea again.",
        False,
    ),
    ("keywords:exclude_word_harder", {"keyword": "blue"}, "A blue-green sea, Blue skies.", True),
    ("keywords:exclude_word_harder", {"keyword": "blue"}, "A blue sea.", False),
    ("keywords:palindrome", {}, "We saw a racecar.", True),  # "a" reads the same reversed
    ("keywords:palindrome", {}, "No such words here.", False),
    ("keywords:keyword_specific_position", {"keyword": "sea", "n": 2, "m": 3}, "Hello there. I love sea water.", True),
    (
        "keywords:keyword_specific_position",
        {"keyword": "sea", "n": 2, "m": 3},
        "Hello there. I love Sea water.",
        False,
    ),  # case-sensitive, as in IFEvalG
    ("keywords:start_end", {}, "Sea is calm and blue sea", True),
    ("keywords:start_end", {}, "Sea is calm and blue sea.", False),  # the period is a token
    ("paragraphs:paragraphs", {}, "First part.\n***\nSecond part.", True),
    ("paragraphs:paragraphs", {}, "Only one part.", False),
    ("paragraphs:paragraphs2", {}, "First part.\n\nSecond part.", True),
    ("paragraphs:paragraphs2", {}, "First.\n\nSecond.\n\nThird.", False),
    ("first_word:first_word_sent", {"first_word": ["Tea"]}, "Tea is hot. tea is good.", True),
    ("first_word:first_word_sent", {"first_word": "tea"}, "Tea is hot. It is good.", False),
    ("first_word:first_word_answer", {"first_word": "tea"}, "Tea is hot. It is good.", True),
    ("first_word:first_word_answer", {"first_word": "tea"}, "Hot tea.", False),
    ("last_word:last_word_sent", {"last_word": "now"}, "Come now. Go now!", True),
    ("last_word:last_word_sent", {"last_word": "now"}, "Come now. Go away!", False),
    ("last_word:last_word_answer", {"last_word": "now"}, "Come here. Go now!", True),
    ("last_word:last_word_answer", {"last_word": "now"}, "Now come here.", False),
    ("punctuation:punctuation_dot", {}, "No dots here, none at all!", True),
    ("punctuation:punctuation_dot", {}, "One dot.", False),
    ("punctuation:punctuation_exclamation", {}, "Calm words.", True),
    ("punctuation:punctuation_exclamation", {}, "Wow!", False),
    ("count:lowercase_counting", {"N": 2}, "THE sea is CALM", True),
    ("count:lowercase_counting", {"N": 2}, "the sea is calm", False),  # all lowercase words count
    ("letters:letter_counting", {"N": 5, "relation": "less than"}, "Sea!", True),
    ("letters:letter_counting", {"N": 5, "relation": "at least"}, "Sea!", False),
    ("letters:letter_counting2", {"letter": "s", "let_frequency": 2, "let_relation": "at least"}, "Seas", True),
    ("letters:letter_counting2", {"letter": "s", "let_frequency": 3, "let_relation": "at least"}, "Seas", False),
    (
        "count:counting_composition",
        {"n_sent": 1, "n_words": 3},
        "Sea is.\n***\nSky is.\n***\nSun is.",
        True,
    ),  # "Sea is ." is three tokens
    (
        "count:counting_composition",
        {"n_sent": 1, "n_words": 3},
        "Sea is.\n***\nSky is.\n***\nSun is.\n***",
        False,
    ),  # a trailing divider fails
    ("count:count_unique", {}, "Every word differs here", True),
    ("count:count_unique", {}, "Sea. Sky.", False),  # the two periods repeat
    ("count:count_increment_word", {"keyword1": "sea", "keyword2": "sky"}, "sea sky sky", True),
    ("count:count_increment_word", {"keyword1": "sea", "keyword2": "sky"}, "sea sea sky sky", False),
]


def _reference(instruction_id: str, kwargs: dict) -> dict:
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs], "prompt": PROMPT}


@pytest.mark.parametrize(("instruction_id", "kwargs", "response", "expected"), CASES)
def test_instruction_table(instruction_id: str, kwargs: dict, response: str, expected: bool):
    assert evaluate_response(response, _reference(instruction_id, kwargs)) == [expected]


def test_table_covers_every_added_id_both_ways():
    added = SUITES["ifevalg"] - SUITES["ifeval"]
    assert len(added) == 29
    assert {(i, e) for i, _, _, e in CASES} == {(i, e) for i in added for e in (True, False)}


def test_loose_mode_forgives_a_preamble():
    reference = _reference("first_word:first_word_answer", {"first_word": "tea"})
    response = "Sure, here it is:\nTea is hot."
    assert evaluate_response(response, reference) == [False]
    assert evaluate_response(response, reference, loose=True) == [True]
