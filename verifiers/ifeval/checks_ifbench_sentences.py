"""IFBench's sentence-level checkers: sentence types, lengths, positions, chains.

Same calling convention as ``checks_lexical``; semantics follow allenai/IFBench's
``instructions.py``, with Punkt-style sentences (``text.split_sentences``) and
``nltk.word_tokenize`` approximated by ``text.nltk_word_tokens``. Deliberate difference: a
sentence or word number below 1 is a malformed reference here, where IFBench draws a
random one (or, for ``sentence:keyword``, reads 0 as the last sentence).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from verifiers.ifeval.text import nltk_word_tokens, split_sentences

_STRIP = string.punctuation + " "
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name}={value} must be at least 1")


def _plain_words(response: str) -> list[str]:
    """Whitespace words with ASCII punctuation removed."""
    return response.translate(_NO_PUNCTUATION).split()


def _endings(response: str) -> Counter[str]:
    return Counter(s[-1] for s in split_sentences(response) if s[-1] in ".?!")


def sentence_type(response: str) -> bool:
    """ratio:sentence_type: twice as many sentences end in ``.`` as in ``?``."""
    ends = _endings(response)
    return ends["."] == 2 * ends["?"]


def sentence_balance(response: str) -> bool:
    """ratio:sentence_balance: as many ``.`` as ``?`` as ``!`` sentences."""
    ends = _endings(response)
    return ends["."] == ends["?"] == ends["!"]


def _alliteration(sentence: str) -> int:
    """Words in runs of two or more consecutive words sharing a first letter."""
    words = [w.lstrip(_STRIP) for w in sentence.lower().split()]
    words = [w for w in words if w]
    total, in_run = 0, False
    for word, following in zip(words, words[1:], strict=False):
        if word[0] == following[0]:
            total += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return total


def alliteration_increment(response: str) -> bool:
    """sentence:alliteration_increment: each sentence alliterates more than the last."""
    previous = -1
    for sentence in split_sentences(response):
        current = _alliteration(sentence)
        if current <= previous:
            return False
        previous = current
    return True


def sentence_words(response: str) -> bool:
    """ratio:sentence_words: three sentences of equal character length."""
    sentences = split_sentences(response)
    return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1


def sentence_keyword(response: str, *, word: str, N: int) -> bool:
    """sentence:keyword: the N-th sentence contains the word (whole word, any case)."""
    _positive("N", N)
    sentences = split_sentences(response)
    if len(sentences) < N:
        return False
    return re.search(rf"\b{re.escape(word)}\b", sentences[N - 1], re.IGNORECASE) is not None


def last_first(response: str) -> bool:
    """words:last_first: each sentence's last word opens the next sentence."""
    sentences = split_sentences(response)
    for sentence, following in zip(sentences, sentences[1:], strict=False):
        last, first = sentence.rstrip(_STRIP).split(), following.lstrip(_STRIP).split()
        if not last or not first or last[-1].lower() != first[0].lower():
            return False
    return True


def sentence_increment(response: str, *, small_n: int) -> bool:
    """sentence:increment: each sentence has exactly ``small_n`` more words than the last."""
    counts = [len(_plain_words(s)) for s in split_sentences(response)]
    return bool(counts) and all(b == a + small_n for a, b in zip(counts, counts[1:], strict=False))


def keywords_specific_position(response: str, *, keyword: str, n: int, m: int) -> bool:
    """words:keywords_specific_position: the m-th word of the n-th sentence is the keyword
    (any case; punctuation tokens are not words)."""
    _positive("n", n)
    _positive("m", m)
    sentences = split_sentences(response)
    if len(sentences) < n:
        return False
    words = [t for t in nltk_word_tokens(sentences[n - 1]) if any(c.isalnum() for c in t)]
    return len(words) >= m and words[m - 1].lower() == keyword.lower()


IFBENCH_SENTENCE_CHECKS: dict[str, Callable[..., bool]] = {
    "ratio:sentence_type": sentence_type,
    "ratio:sentence_balance": sentence_balance,
    "ratio:sentence_words": sentence_words,
    "sentence:alliteration_increment": alliteration_increment,
    "sentence:keyword": sentence_keyword,
    "words:last_first": last_first,
    "sentence:increment": sentence_increment,
    "words:keywords_specific_position": keywords_specific_position,
}
