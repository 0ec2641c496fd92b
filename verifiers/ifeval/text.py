"""Offline text measures for the instruction checkers: words, tokens, sentences, language.

IFEval's own checkers lean on NLTK (the Punkt sentence model and the Treebank word
tokenizer). Neither may be downloaded here, so this module approximates them with small,
linear-time rules that reproduce their behaviour on ordinary English prose.
``split_sentences`` returns each sentence as written, line breaks included, where Google's
regex splitter joins a sentence's lines with spaces; the sentences are the same.

Language detection uses langdetect with its sampling seed pinned to 0, as Google's code
pins it, but on a detector factory of our own rather than langdetect's class-wide seed:
Google sets ``DetectorFactory.seed`` for the whole process, so any other library that sets
it (lm-eval's tests set 42, under which "Hello world" reads as Dutch) or leaves it unset
changes the verdicts. Ours depend on neither that attribute nor the ``random`` or numpy
global state, and we leave langdetect's global setup as we found it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from langdetect import DetectorFactory, LangDetectException
from langdetect.detector_factory import PROFILES_DIRECTORY

_LANGDETECT_SEED = 0  # langdetect samples n-grams at random; IFEval's seed makes it repeatable

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\S+")
# Closing characters that may trail a sentence-final mark ("end." / end.) / *end.*).
_CLOSERS = "\"')]}*_`»”’"
_OPENERS = "\"'([{*_`«“‘"
_SENTENCE_MARK = re.compile(rf"[.?!][{re.escape(_CLOSERS)}]*(?=\s)")
_NEXT_TOKEN = re.compile(r"\s+(\S+)")
_NUMBER = re.compile(r"^-?[.,]?\d[\d,.\-]*$")
_DOTTED_ABBREVIATION = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]$")  # u.s, e.g, i.e, a.m

# Abbreviations that rarely end a sentence (Punkt's English model knows these and more).
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft vs etc approx dept inc ltd corp jan feb apr jun jul "
    "aug sep sept oct nov dec lt sgt capt gov sen ave blvd rd pp eds cf "
    "ph.d ed.d ll.b ll.m b.sc m.sc d.phil".split()  # degrees that the dotted rule misses
)  # words that are also ordinary English ("sun", "no", "sat") are left out: they end sentences
# Capitalized words that make Punkt break even after an abbreviation or an ellipsis.
_SENTENCE_STARTERS = frozenset(
    "the this that these those it its i in we he she they you but and however a an there "
    "if for as so when while after before my our his her their what why how".split()
)
# Treebank splits English clitics off the word they follow ("DON'T" -> "DO", "N'T").
_CLITIC = re.compile(r"(?i)(n't|'s|'m|'d|'ll|'re|'ve)$")
# Treebank also splits on these characters; ":" and "," only when not inside a number.
_TREEBANK_SPLIT = re.compile(r"[;@#$%&?!\[\](){}<>\"]|(?<!\d)[:,]|[:,](?!\d)")
_TREEBANK_KEEP = re.compile(rf"({_TREEBANK_SPLIT.pattern})")  # the same cuts, marks kept


RELATIONS = ("less than", "at least")


def compare(count: int, relation: str, threshold: int) -> bool:
    """IFEval's two count relations: ``less than`` is strict, ``at least`` inclusive."""
    if relation == "less than":
        return count < threshold
    if relation == "at least":
        return count >= threshold
    raise ValueError(f"unknown relation {relation!r}; expected one of {RELATIONS}")


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs: the tokenizer IFEval uses for word counts."""
    return sum(1 for _ in _WORD.finditer(text))


def _strip_closers(token: str) -> str:
    return token.rstrip(_CLOSERS)


def _ends_sentence(token: str, next_token: str) -> bool:
    """Whether a Punkt-style splitter breaks after ``token`` when ``next_token`` follows."""
    core = _strip_closers(token)
    if not core or core[-1] not in ".?!":
        return False
    if core[-1] in "?!":
        return True
    next_core = next_token.lstrip(_OPENERS)
    next_upper = next_core[:1].isupper()
    if core.endswith(".."):  # an ellipsis ends a sentence only before a capitalized word
        return next_upper
    word = core[:-1].lstrip(_OPENERS).lower()
    if word in _ABBREVIATIONS or _DOTTED_ABBREVIATION.match(word):
        return next_upper and next_core.lower().rstrip(",.;:") in _SENTENCE_STARTERS
    if len(word) == 1 and word.isalpha():  # an initial, as in "J. Smith"
        return False
    if _NUMBER.match(word):  # "1." opens a list item unless lowercase text follows
        return not next_core[:1].islower()
    return True


def split_sentences(text: str) -> list[str]:
    """Split text into sentences after ``.``, ``?`` or ``!`` followed by whitespace.

    Newlines alone do not end a sentence (as in Punkt); abbreviations, initials and
    ellipses before lowercase words do not either; a numbered-list marker such as ``1.``
    followed by a capitalized word is a sentence of its own, as Punkt makes it.
    """
    sentences: list[str] = []
    start = 0
    # Only a token ending in a mark (closers aside) can end a sentence: visit those alone,
    # so prose without sentence marks costs one regex pass rather than a call per token.
    for mark in _SENTENCE_MARK.finditer(text):
        following = _NEXT_TOKEN.match(text, mark.end())
        if following is None:
            break  # the last token: nothing follows to start another sentence
        token_start = mark.start()
        while token_start > 0 and not text[token_start - 1].isspace():
            token_start -= 1
        if _ends_sentence(text[token_start : mark.end()], following.group(1)):
            sentences.append(text[start : mark.end()].strip())
            start = following.start(1)
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


def word_tokens(text: str) -> list[str]:
    """Treebank-like word tokens: whitespace chunks, split on punctuation and clitics."""
    tokens: list[str] = []
    for chunk in _TOKEN.findall(text):
        for piece in _TREEBANK_SPLIT.split(chunk):
            if not piece:
                continue
            clitic = _CLITIC.search(piece)
            if clitic and clitic.start() > 0:
                tokens.extend((piece[: clitic.start()], clitic.group()))
            else:
                tokens.append(piece)
    return tokens


def count_capital_words(text: str) -> int:
    """Number of tokens written entirely in capitals (``str.isupper``), e.g. ``NASA``, ``I``."""
    return sum(1 for token in word_tokens(text) if token.isupper())


_LANGDETECT_MAX_CHARS = 100_000  # langdetect reads ~10k chars; bound its regex pre-pass too


def detect_language(text: str) -> str | None:
    """ISO code langdetect assigns to ``text``, or None when it finds no language features."""
    return _detect(text[:_LANGDETECT_MAX_CHARS])


@lru_cache(maxsize=1)  # the profiles take ~2 s and ~60 MB to load: once per process
def _detector_factory() -> DetectorFactory:
    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.set_seed(_LANGDETECT_SEED)  # an instance attribute: the class-wide seed is not read
    return factory


@lru_cache(maxsize=64)  # loose mode asks about near-identical variants; detection is ~20 ms
def _detect(text: str) -> str | None:
    detector = _detector_factory().create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None


# An argument type: a string used exactly as written, padding included (character
# indices into it, texts to copy or to overlap with), where ``str`` arguments are stripped.
Verbatim = str
# An argument type: a word, or a list whose first item is the word (IFEvalG accepts both).
WordOrFirst = str


def nltk_word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize``-like tokens, punctuation included: each sentence's chunks split
    at Treebank's punctuation and clitics, its final period a token of its own."""
    tokens: list[str] = []
    for sentence in split_sentences(text):
        words: list[str] = []
        for chunk in _TOKEN.findall(sentence):
            if chunk.isalnum():  # most words: nothing to split off
                words.append(chunk)
                continue
            for piece in _TREEBANK_KEEP.split(chunk):
                if not piece:
                    continue
                if "'" not in piece and not piece.endswith("..."):
                    words.append(piece)  # the common case, kept cheap for megabyte chunks
                elif piece.endswith("...") and len(piece) > 3:
                    words.extend((piece[:-3], "..."))
                else:
                    clitic = _CLITIC.search(piece)
                    cut = clitic.start() if clitic and clitic.start() > 0 else len(piece)
                    words.extend(p for p in (piece[:cut], piece[cut:]) if p)
        if words and len(words[-1]) > 1 and words[-1].endswith(".") and words[-1] != "...":
            words[-1:] = [words[-1][:-1], "."]
        tokens.extend(words)
    return tokens
