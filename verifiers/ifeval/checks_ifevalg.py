"""IFEvalG's 29 instruction checkers beyond IFEval (open-instruct's training constraints).

Same calling convention as ``checks_lexical``: the response, then the instruction's keyword
arguments under IFEvalG's names; ``ValueError`` only for an argument no response could
satisfy. Semantics follow open-instruct's ``IFEvalG/instructions.py``, including its quirks
(``count:lowercase_counting`` counts all lowercase words, ``keywords:palindrome`` accepts any
one-letter word, ``count:count_unique`` counts punctuation tokens too). Deliberate
differences:

- Keywords and phrases are matched literally; IFEvalG hands them to ``re`` as patterns.
- A stated count or position of 0 is used as stated; IFEvalG replaces a falsy one with a
  random draw (its generator's path), so a scored reference must not rely on that.
- ``nltk.word_tokenize`` is approximated by ``text.nltk_word_tokens``; sentences are split
  by IFEval's regex rules (``sentences_rules``), as IFEvalG does, exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from verifiers.ifeval.checks_layout import number_paragraphs
from verifiers.ifeval.checks_lexical import keyword_frequency, letter_frequency
from verifiers.ifeval.sentences_rules import split_sentences_by_rules
from verifiers.ifeval.text import Verbatim, WordOrFirst, compare, nltk_word_tokens

_PARAGRAPH_RULE = re.compile(r"\s?\*\*\*\s?")
_NON_WORD = re.compile(r"[^\w\s]")
_LOWERCASE_WORD = re.compile(r"\b[a-z]+\b")
_LETTER = re.compile(r"[a-zA-Z]")


def _occurrences(keyword: str, response: str) -> int:
    return len(re.findall(re.escape(keyword), response, flags=re.IGNORECASE))


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name}={value} must be at least 1")


def _phrase_copies(response: str, first: str, last: str) -> list[str]:
    """What ``re.findall(first + " .*? " + last)`` finds, in linear time: on each line, from
    each ``first + " "`` to the nearest ``" " + last`` after it. When a start finds no end,
    no later start on that line can, so the line is done (the regex would rescan it)."""
    found = []
    opener, closer = f"{first} ", f" {last}"
    for line in response.split("\n"):
        position = 0
        while (start := line.find(opener, position)) >= 0:
            end = line.find(closer, start + len(opener))
            if end < 0:
                break
            position = end + len(closer)
            found.append(line[start:position])
    return found


def repeat_phrase(response: str, *, phrase: str, small_n: int) -> bool:
    """copy:repeat_phrase: the phrase appears ``small_n`` times, each with exactly one word
    changed (found between the phrase's first and last words, on one line)."""
    reference = phrase.split()
    found = _phrase_copies(response, reference[0], reference[-1])
    if len(found) != small_n:
        return False
    for copy in found:
        words = copy.split()
        if len(words) != len(reference):
            return False
        if sum(a != b for a, b in zip(words, reference, strict=True)) != 1:
            return False
    return True


def copy_request(response: str, *, prompt_to_repeat: Verbatim) -> bool:
    """copy:copy and copy:copying_simple: the response is the request, case aside."""
    return response.strip().lower() == prompt_to_repeat.strip().lower()


def copy_span_idx(response: str, *, prompt_to_repeat: Verbatim, n_start: int, n_end: int) -> bool:
    """new:copy_span_idx: the response is ``prompt_to_repeat[n_start:n_end]`` (end excluded)."""
    if n_start > n_end:
        raise ValueError(f"n_start={n_start} is after n_end={n_end}")
    span = prompt_to_repeat[n_start:n_end]
    return response.strip().lower() == span.strip().lower()


def copying_multiple(response: str, *, prompt_to_repeat: Verbatim, N: int) -> bool:
    """copy:copying_multiple: exactly N copies of the request divided by ``******``."""
    copies = response.split("******")
    return len(copies) == N and all(copy_request(c, prompt_to_repeat=prompt_to_repeat) for c in copies)


def sentence_hyphens(response: str) -> bool:
    """detectable_format:sentence_hyphens: sentences joined by hyphens, no spaces around."""
    gold = split_sentences_by_rules(response.replace("-", " "))
    parts = response.split("-")
    return all(part.strip() == part == sentence for part, sentence in zip(parts, gold, strict=False))


def no_adjacent_consecutive(response: str) -> bool:
    """keywords:no_adjacent_consecutive: no two neighbouring words start with letters that
    follow each other in the alphabet (``a`` then ``b``)."""
    words = response.split()
    for word, following in zip(words, words[1:], strict=False):
        first, second = word[0].lower(), following[0].lower()
        if len(first) != 1 or len(second) != 1 or ord(second) - ord(first) == 1:
            return False
    return True


def square_brackets(response: str) -> bool:
    """detectable_format:square_brackets: every word is wrapped in ``[...]``."""
    return all(word.startswith("[") and word.endswith("]") for word in response.split())


def word_once(response: str, *, keyword: str) -> bool:
    """keywords:word_once: the keyword occurs exactly once (case-insensitive, anywhere)."""
    return _occurrences(keyword, response) == 1


def exclude_word_harder(response: str, *, keyword: str, instruction: str | None = None) -> bool:
    """keywords:exclude_word_harder: the keyword never appears between two spaces
    (case-sensitive). ``instruction`` is the generator's source text, ignored here."""
    return f" {keyword} " not in response


def paragraphs_divided(response: str) -> bool:
    """paragraphs:paragraphs: exactly two paragraphs divided by ``***``."""
    return number_paragraphs(response, num_paragraphs=2)


def paragraphs_blank_line(response: str) -> bool:
    """paragraphs:paragraphs2: exactly two paragraphs divided by a blank line."""
    parts = response.split("\n\n")
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
            count -= 1
    return count == 2


def first_word_sent(response: str, *, first_word: WordOrFirst) -> bool:
    """first_word:first_word_sent: every sentence starts with the word (case-insensitive)."""
    sentences = split_sentences_by_rules(response)
    return all(s.split() and s.split()[0].lower() == first_word.lower() for s in sentences)


def first_word_answer(response: str, *, first_word: str) -> bool:
    """first_word:first_word_answer: the response starts with the word (case-insensitive)."""
    words = response.split()
    return bool(words) and words[0].lower() == first_word.lower()


def _bare(word: str) -> str:
    return _NON_WORD.sub("", word).lower()


def last_word_sent(response: str, *, last_word: WordOrFirst) -> bool:
    """last_word:last_word_sent: every sentence ends with the word, punctuation aside."""
    sentences = split_sentences_by_rules(response)
    return all(s.split() and _bare(s.split()[-1]) == last_word.lower() for s in sentences)


def last_word_answer(response: str, *, last_word: str) -> bool:
    """last_word:last_word_answer: the response ends with the word, punctuation aside."""
    words = response.split()
    return bool(words) and _bare(words[-1]) == last_word.lower()


def bigram_wrapping(response: str) -> bool:
    """detectable_format:bigram_wrapping: words paired as ``<<first second>>``."""
    words = response.split()
    return all(words[i].startswith("<<") and words[i + 1].endswith(">>") for i in range(0, len(words) - 1, 2))


def no_dot(response: str) -> bool:
    """punctuation:punctuation_dot: the response contains no ``.``."""
    return "." not in response


def no_exclamation(response: str) -> bool:
    """punctuation:punctuation_exclamation: the response contains no ``!``."""
    return "!" not in response


def lowercase_counting(response: str, *, N: int) -> bool:
    """count:lowercase_counting: at most N all-lowercase words in the whole response."""
    return len(_LOWERCASE_WORD.findall(response)) <= N


def letter_counting(response: str, *, N: int, relation: str) -> bool:
    """letters:letter_counting: ASCII letters in the response, ``relation`` N."""
    return compare(len(_LETTER.findall(response)), relation, N)


def counting_composition(response: str, *, n_sent: int, n_words: int) -> bool:
    """count:counting_composition: three ``***``-divided paragraphs of ``n_sent`` sentences
    of ``n_words`` tokens each (punctuation tokens count, as NLTK's tokenizer makes them).

    As in IFEvalG, an empty paragraph before the first or after the last divider is not a
    paragraph but still fails the sentence count.
    """
    paragraphs = _PARAGRAPH_RULE.split(response)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index not in (0, len(paragraphs) - 1):
                return False
            count -= 1
        sentences = split_sentences_by_rules(paragraph)
        if len(sentences) != n_sent:
            return False
        if any(len(nltk_word_tokens(sentence)) != n_words for sentence in sentences):
            return False
    return count == 3


def count_unique(response: str) -> bool:
    """count:count_unique: no token repeats (punctuation tokens included, case-sensitive)."""
    tokens = nltk_word_tokens(response)
    return len(tokens) == len(set(tokens))


def count_increment_word(response: str, *, keyword1: str, keyword2: str) -> bool:
    """count:count_increment_word: ``keyword1`` occurs once and ``keyword2`` twice."""
    return _occurrences(keyword1, response) == 1 and _occurrences(keyword2, response) == 2


def palindrome_basic(response: str) -> bool:
    """keywords:palindrome: some whitespace-separated word reads the same reversed."""
    return any(word == word[::-1] for word in response.split())


def keyword_specific_position(response: str, *, keyword: WordOrFirst, n: int, m: int) -> bool:
    """keywords:keyword_specific_position: the m-th token of the n-th sentence is the
    keyword (case-sensitive, as in IFEvalG)."""
    _positive("n", n)
    _positive("m", m)
    sentences = split_sentences_by_rules(response)
    if len(sentences) < n:
        return False
    words = nltk_word_tokens(sentences[n - 1])
    return len(words) >= m and words[m - 1] == keyword


def start_end(response: str) -> bool:
    """keywords:start_end: the first and last tokens are the same word (case-insensitive);
    a final punctuation mark is a token, so it fails."""
    tokens = nltk_word_tokens(response)
    return len(tokens) >= 2 and tokens[0].lower() == tokens[-1].lower()


IFEVALG_CHECKS: dict[str, Callable[..., bool]] = {
    "copy:repeat_phrase": repeat_phrase,
    "copy:copy": copy_request,
    "copy:copying_simple": copy_request,
    "copy:copying_multiple": copying_multiple,
    "new:copy_span_idx": copy_span_idx,
    "detectable_format:sentence_hyphens": sentence_hyphens,
    "detectable_format:square_brackets": square_brackets,
    "detectable_format:bigram_wrapping": bigram_wrapping,
    "keywords:no_adjacent_consecutive": no_adjacent_consecutive,
    "keywords:word_once": word_once,
    "keywords:word_count_different_numbers": keyword_frequency,
    "keywords:exclude_word_harder": exclude_word_harder,
    "keywords:palindrome": palindrome_basic,
    "keywords:keyword_specific_position": keyword_specific_position,
    "keywords:start_end": start_end,
    "paragraphs:paragraphs": paragraphs_divided,
    "paragraphs:paragraphs2": paragraphs_blank_line,
    "first_word:first_word_sent": first_word_sent,
    "first_word:first_word_answer": first_word_answer,
    "last_word:last_word_sent": last_word_sent,
    "last_word:last_word_answer": last_word_answer,
    "punctuation:punctuation_dot": no_dot,
    "punctuation:punctuation_exclamation": no_exclamation,
    "count:lowercase_counting": lowercase_counting,
    "count:counting_composition": counting_composition,
    "count:count_unique": count_unique,
    "count:count_increment_word": count_increment_word,
    "letters:letter_counting": letter_counting,
    "letters:letter_counting2": letter_frequency,
}
