"""Offline text measures behind the IFEval checkers: sentences, capital words, word counts."""

from __future__ import annotations

import pytest

from verifiers.ifeval.text import count_capital_words, count_words, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. How are you? Fine!", 3),
        ("Mr. Smith met Dr. Jones. They talked.", 2),
        ("See e.g. the manual. It helps.", 2),
        ("Intro:\n1. First item. 2. Second item.", 4),  # Punkt makes list markers sentences
        ("Wait... what happened? Nothing... Really.", 3),
        ("Heading without stop\nnext line continues.", 1),
        ('He said "stop." Then he left.', 2),
        ("J. K. Rowling wrote it.", 1),
        ("Apples, pears etc. The end.", 2),  # an abbreviation before a sentence starter
        ("Near the sun. They burn.", 2),  # "sun" is a word, not the weekday abbreviation
        ("A decimal 3.14 stays. Ok!", 2),
        ("She earned a Ph.D. in physics. Then she taught.", 2),
        ("The U.S.A has many Ph.D. students. They publish.", 2),
        ("Mr. Lee moved to the U.S. last year.", 1),
        ("He moved to the U.S. The move was hard.", 2),  # Punkt breaks before "The"
        ("Bring tools, e.g. a hammer. Then start.", 2),
        ("", 0),
    ],
)
def test_sentence_splitter(text: str, expected: int):
    assert len(split_sentences(text)) == expected


@pytest.mark.parametrize(
    ("text", "capitals", "words"),
    [
        ("I LOVE the U.S. economy", 3, 6),
        ("DON'T STOP, IT'S FINE", 6, 6),
        ("(AI) and ML/DL; Ok", 2, 5),
        ("B5 vitamins, COVID-19", 2, 4),
    ],
)
def test_capital_words_and_word_count(text: str, capitals: int, words: int):
    assert count_capital_words(text) == capitals
    assert count_words(text) == words
