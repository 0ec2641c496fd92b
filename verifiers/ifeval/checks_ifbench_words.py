"""IFBench's word-level checkers: counts, ratios, word shapes, keyword positions.

Same calling convention as ``checks_lexical``. Semantics follow allenai/IFBench's
``instructions.py`` (its quirks included: ``count:conjunctions`` counts distinct spellings
such as "and" and "and,", ``ratio:sentence_words`` checks equal lengths only). Sentences
are Punkt-style (``text.split_sentences``), ``nltk.word_tokenize`` is approximated by
``text.nltk_word_tokens``, and syllables and verbs come from ``estimates`` (see there).
Deliberate difference: a cycle length below 1 is a malformed reference here, where
IFBench draws a random one. Sentence-level checkers live in ``checks_ifbench_sentences``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from verifiers.ifeval.estimates import count_syllables, starts_with_verb
from verifiers.ifeval.text import Verbatim, count_words, nltk_word_tokens
from verifiers.ifeval.wordlists import (
    COORDINATING_CONJUNCTIONS,
    PERSON_NAMES,
    PRONOUNS,
    STOP_WORDS,
)

PUNCTUATION = string.punctuation
_STRIP = PUNCTUATION + " "
_NO_PUNCTUATION = str.maketrans("", "", PUNCTUATION)
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")
_PRIMES = frozenset([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71])
_PRIMES |= {73, 79, 83, 89, 97}  # IFBench's table ends at 97: longer words fail
_MULTIPLE_COUNTS = (1, 2, 3, 5, 7)


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name}={value} must be at least 1")


def _plain_words(response: str) -> list[str]:
    """Whitespace words with ASCII punctuation removed."""
    return response.translate(_NO_PUNCTUATION).split()


def word_count_range(response: str, *, min_words: int, max_words: int) -> bool:
    """count:word_count_range: between min and max ``\\w+`` words, both inclusive."""
    if min_words > max_words:
        raise ValueError(f"min_words={min_words} exceeds max_words={max_words}")
    return min_words <= count_words(response) <= max_words


def unique_word_count(response: str, *, N: int) -> bool:
    """count:unique_word_count: at least N distinct lowercase words, outer punctuation off."""
    return len({word.strip(_STRIP) for word in response.lower().split()}) >= N


def stop_words(response: str, *, percentage: int) -> bool:
    """ratio:stop_words: stop words are at most ``percentage`` % of the ``\\w+`` words."""
    words = _WORD.findall(response)
    if not words:
        return False
    share = 100 * sum(1 for word in words if word.lower() in STOP_WORDS) / len(words)
    return share <= percentage


def conjunctions(response: str, *, small_n: int) -> bool:
    """count:conjunctions: at least ``small_n`` distinct coordinating conjunctions (distinct
    as written: IFBench counts "and" and "And," apart)."""
    found = {w for w in response.split() if w.strip(_STRIP).lower() in COORDINATING_CONJUNCTIONS}
    return len(found) >= small_n


def person_names(response: str, *, N: int) -> bool:
    """count:person_names: at least N of IFBench's 50 listed names, as whole words."""
    # The substring test first: a \b-anchored search of a megabyte costs far more.
    found = sum(1 for n in PERSON_NAMES if n in response and re.search(rf"\b{n}\b", response))
    return found >= N


def _trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def overlap(response: str, *, reference_text: Verbatim, percentage: int) -> bool:
    """ratio:overlap: the share of the response's character trigrams found in the
    reference text is within 2 points of ``percentage``."""
    grams = _trigrams(response)
    if not grams:
        return False
    share = 100 * len(grams & _trigrams(reference_text)) / len(grams)
    return percentage - 2 <= share <= percentage + 2


def numbers(response: str, *, N: int) -> bool:
    """count:numbers: exactly N digit runs once punctuation is removed (so 3.14 is one)."""
    return len(_DIGITS.findall(response.translate(_NO_PUNCTUATION))) == N


def alphabet(response: str) -> bool:
    """words:alphabet: each word starts with the letter after the previous word's, Z to A."""
    words = _plain_words(response)
    if not words or words[0][0].lower() not in string.ascii_lowercase:
        return False
    letter = words[0][0].lower()
    for word in words[1:]:
        letter = chr((ord(letter) - ord("a") + 1) % 26 + ord("a"))
        if word[0].lower() != letter:
            return False
    return True


def vowel(response: str) -> bool:
    """words:vowel: one paragraph (line) using at most three distinct vowels."""
    lines = response.strip().split("\n")
    return len(lines) == 1 and len(set(lines[0].lower()) & set("aeiou")) <= 3


def consonants(response: str) -> bool:
    """words:consonants: every word holds two consonants in a row."""
    return all(
        any(a in _CONSONANTS and b in _CONSONANTS for a, b in zip(word, word[1:], strict=False))
        for word in response.lower().split()
    )


def palindromes(response: str) -> bool:
    """words:palindrome: at least 10 palindromic words of 5 or more letters."""
    words = response.translate(_NO_PUNCTUATION).lower().split()
    return sum(1 for w in words if len(w) >= 5 and w == w[::-1]) >= 10


def punctuation_cover(response: str) -> bool:
    """count:punctuation: ``. , ! ? ; :`` all appear, and an interrobang (``?!``, ``!?``, ``‽``)
    besides the marks it is made of."""
    if not ("!?" in response or "?!" in response or "\u203d" in response):
        return False
    rest = response.replace("?!", "", 1)
    if len(rest) == len(response):
        rest = response.replace("!?", "", 1)
    return set(".,!?;:") <= set(rest)


def prime_lengths(response: str) -> bool:
    """words:prime_lengths: every word (punctuation removed) has a prime length."""
    return all(len(word) in _PRIMES for word in _plain_words(response))


def words_japanese(response: str, *, N: int) -> bool:
    """count:words_japanese: every N-th word (numbers aside) contains Japanese script."""
    _positive("N", N)
    for position, word in enumerate(response.split(), start=1):
        word = word.strip(_STRIP)
        if position % N == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
            return False
    return True


def start_verb(response: str) -> bool:
    """words:start_verb: the first word is a verb (an approximation of NLTK's tagger)."""
    tokens = nltk_word_tokens(response)
    return bool(tokens) and starts_with_verb(tokens[0])


def repeats(response: str, *, small_n: int) -> bool:
    """words:repeats: no word (lowercased, punctuation removed) occurs over ``small_n`` times."""
    counts = Counter(response.lower().translate(_NO_PUNCTUATION).split())
    return all(count <= small_n for count in counts.values())


def pronouns(response: str, *, N: int) -> bool:
    """count:pronouns: at least N pronoun tokens (``she/her`` counts as two)."""
    tokens = nltk_word_tokens(response.replace("/", " ").lower())
    return sum(1 for token in tokens if token in PRONOUNS) >= N


def odd_even_syllables(response: str) -> bool:
    """words:odd_even_syllables: words alternate odd and even syllable counts."""
    words = response.translate(_NO_PUNCTUATION).lower().split()
    parities = [count_syllables(word) % 2 for word in words]
    return all(a != b for a, b in zip(parities, parities[1:], strict=False))


def paragraph_last_first(response: str) -> bool:
    """words:paragraph_last_first: each non-blank line ends with the word it starts with."""
    for line in response.split("\n"):
        words = line.strip().lower().strip(_STRIP).split()
        if words and words[0] != words[-1]:
            return False
    return True


def no_consecutive(response: str) -> bool:
    """words:no_consecutive: no two neighbouring words share their first letter."""
    words = response.lower().translate(_NO_PUNCTUATION).split()
    return all(a[0] != b[0] for a, b in zip(words, words[1:], strict=False))


def keywords_multiple(
    response: str, *, keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str
) -> bool:
    """count:keywords_multiple: the five keywords occur 1, 2, 3, 5 and 7 times (substrings,
    any case)."""
    text = response.lower()
    keywords = (keyword1, keyword2, keyword3, keyword4, keyword5)
    return all(text.count(k.lower()) == n for k, n in zip(keywords, _MULTIPLE_COUNTS, strict=True))


def words_position(response: str, *, keyword: str) -> bool:
    """words:words_position: the second and the second-to-last words are the keyword
    (a final punctuation token is skipped)."""
    tokens = nltk_word_tokens(response)
    if tokens and tokens[-1] in PUNCTUATION:
        tokens = tokens[:-1]
    if len(tokens) < 2:
        return False
    return tokens[1].lower() == tokens[-2].lower() == keyword.lower()


IFBENCH_WORD_CHECKS: dict[str, Callable[..., bool]] = {
    "count:word_count_range": word_count_range,
    "count:unique_word_count": unique_word_count,
    "count:conjunctions": conjunctions,
    "count:person_names": person_names,
    "count:numbers": numbers,
    "count:punctuation": punctuation_cover,
    "count:words_japanese": words_japanese,
    "count:pronouns": pronouns,
    "count:keywords_multiple": keywords_multiple,
    "ratio:stop_words": stop_words,
    "ratio:overlap": overlap,
    "words:alphabet": alphabet,
    "words:vowel": vowel,
    "words:consonants": consonants,
    "words:palindrome": palindromes,
    "words:prime_lengths": prime_lengths,
    "words:start_verb": start_verb,
    "words:repeats": repeats,
    "words:odd_even_syllables": odd_even_syllables,
    "words:paragraph_last_first": paragraph_last_first,
    "words:no_consecutive": no_consecutive,
    "words:words_position": words_position,
}
