"""Malformed IFEvalG and IFBench references: an ``error`` verdict, never a crash or a score."""

from __future__ import annotations

import pytest

from verifiers.ifeval import IFEvalVerifier
from verifiers.verdict import Status

MALFORMED = [
    ("count:word_count_range", {"min_words": 10, "max_words": 5}),  # an empty range
    ("count:word_count_range", {"min_words": -1, "max_words": 5}),
    ("count:word_count_range", {"min_words": 1}),  # missing max_words
    ("count:word_count_range", {"min_words": "ten", "max_words": 5}),
    ("count:words_japanese", {"N": 0}),  # every 0th word
    ("sentence:keyword", {"word": "sea", "N": 0}),
    ("sentence:keyword", {"word": ["sea"], "N": 1}),
    ("words:keywords_specific_position", {"keyword": "sea", "n": 1, "m": 0}),
    ("repeat:repeat_span", {"prompt_to_repeat": "abc", "n_start": 2, "n_end": 1}),
    ("repeat:repeat_change", {"prompt_to_repeat": "   "}),
    ("ratio:overlap", {"reference_text": 3, "percentage": 50}),
    ("ratio:stop_words", {"percentage": 12.5}),  # a count must be whole
    ("format:options", {}),
    ("format:emoji", {"N": 3}),  # an argument the checker does not take
    ("custom:multiples", {"anything": 1}),
    ("copy:repeat_phrase", {"phrase": "a b", "small_n": True}),
    ("new:copy_span_idx", {"prompt_to_repeat": "abc", "n_start": 3, "n_end": 1}),
    ("keywords:keyword_specific_position", {"keyword": [], "n": 1, "m": 1}),
    ("letters:letter_counting", {"N": 3, "relation": "at most"}),
    ("count:counting_composition", {"n_sent": -2, "n_words": 3}),
    ("no_such:instruction", {}),
]


@pytest.mark.parametrize(("instruction_id", "kwargs"), MALFORMED)
@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_malformed_kwargs_give_an_error_verdict(instruction_id, kwargs, mode):
    reference = {"instruction_id_list": [instruction_id], "kwargs": [kwargs], "prompt": "p"}
    verdict = IFEvalVerifier(mode=mode).verify("Any response at all.", reference)
    assert verdict.status is Status.ERROR, verdict
    assert instruction_id in verdict.details or instruction_id in str(verdict)


def test_kwargs_not_an_object_give_an_error_verdict():
    reference = {"instruction_id_list": ["format:list"], "kwargs": ["SEPARATOR"], "prompt": "p"}
    assert IFEvalVerifier().verify("a", reference).status is Status.ERROR
