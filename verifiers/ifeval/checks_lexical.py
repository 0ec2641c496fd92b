"""IFEval checkers on words and characters: keywords, language, case, punctuation, start/end.

Each checker takes the response and the instruction's keyword arguments (IFEval's names)
and returns whether the response follows the instruction. Checkers never raise on model
output; they only raise ``ValueError`` for an invalid argument (a bad reference).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from verifiers.ifeval.text import compare, count_capital_words, detect_language


def keyword_existence(response: str, *, keywords: Sequence[str]) -> bool:
    """keywords:existence: every keyword appears (case-insensitive, anywhere)."""
    return all(re.search(re.escape(k), response, flags=re.IGNORECASE) for k in keywords)


def keyword_frequency(response: str, *, keyword: str, frequency: int, relation: str) -> bool:
    """keywords:frequency: the keyword occurs ``relation`` ``frequency`` times."""
    count = len(re.findall(re.escape(keyword), response, flags=re.IGNORECASE))
    return compare(count, relation, frequency)


def forbidden_words(response: str, *, forbidden_words: Sequence[str]) -> bool:
    """keywords:forbidden_words: no forbidden word appears as a whole word."""
    return not any(re.search(rf"\b{re.escape(word)}\b", response, flags=re.IGNORECASE) for word in forbidden_words)


def letter_frequency(response: str, *, letter: str, let_frequency: int, let_relation: str) -> bool:
    """keywords:letter_frequency: the letter (any case) occurs ``let_relation`` times."""
    letter = letter.strip().lower()
    if len(letter) != 1:
        raise ValueError(f"letter must be one character, got {letter!r}")
    return compare(response.lower().count(letter), let_relation, let_frequency)


def response_language(response: str, *, language: str) -> bool:
    """language:response_language: langdetect's code equals ``language``.

    Text without detectable language features passes, as in IFEval.
    """
    detected = detect_language(response)
    return detected is None or detected == language


def english_lowercase(response: str) -> bool:
    """change_case:english_lowercase: all letters lowercase and the text is English."""
    if not response.islower():
        return False
    return detect_language(response) in (None, "en")


def english_capital(response: str) -> bool:
    """change_case:english_capital: all letters uppercase and the text is English."""
    if not response.isupper():
        return False
    return detect_language(response) in (None, "en")


def capital_word_frequency(response: str, *, capital_frequency: int, capital_relation: str) -> bool:
    """change_case:capital_word_frequency: all-capital words occur ``capital_relation`` times."""
    return compare(count_capital_words(response), capital_relation, capital_frequency)


def no_comma(response: str) -> bool:
    """punctuation:no_comma: the response contains no ASCII comma."""
    return "," not in response


def end_checker(response: str, *, end_phrase: str) -> bool:
    """startend:end_checker: ends with the phrase (case-insensitive; outer quotes ignored)."""
    ending = response.strip().strip('"').lower()
    return ending.endswith(end_phrase.strip().lower())


def quotation(response: str) -> bool:
    """startend:quotation: the whole response is wrapped in double quotation marks."""
    text = response.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


LEXICAL_CHECKS: dict[str, Callable[..., bool]] = {
    "keywords:existence": keyword_existence,
    "keywords:frequency": keyword_frequency,
    "keywords:forbidden_words": forbidden_words,
    "keywords:letter_frequency": letter_frequency,
    "language:response_language": response_language,
    "change_case:english_lowercase": english_lowercase,
    "change_case:english_capital": english_capital,
    "change_case:capital_word_frequency": capital_word_frequency,
    "punctuation:no_comma": no_comma,
    "startend:end_checker": end_checker,
    "startend:quotation": quotation,
}
