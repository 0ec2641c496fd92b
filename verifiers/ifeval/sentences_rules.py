"""Rule-based sentence splitter of IFEval's utilities, which IFEvalG's new checkers use.

Google's ``instructions_util.split_into_sentences`` (kept by open-instruct's IFEvalG) is a
fixed sequence of regex rewrites, not the Punkt model: dots that do not end a sentence
(titles, initials, acronyms, decimals, ``.com``, ellipses, company suffixes) are protected,
every remaining ``.``, ``?`` and ``!`` ends one, and a sentence's lines are joined with
spaces. It needs no data, so this module reproduces it rule for rule; IFBench and the 25
IFEval checkers count sentences with Punkt instead (``text.split_sentences``).
"""

from __future__ import annotations

import re

_DOT = "\x00"  # stands for a protected "." until the split; cannot occur in model text here
_STOP = "\x01"  # marks a sentence end

_LETTER = "([A-Za-z])"
_TITLE = re.compile(r"(Mr|St|Mrs|Ms|Dr)[.]")
_WEBSITE = re.compile(r"[.](com|net|org|io|gov|edu|me)")
_DECIMAL = re.compile(r"([0-9])[.]([0-9])")
_DOTS = re.compile(r"\.{2,}")
_STARTER = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s"
    r"|However\s|That\s|This\s|Wherever)"
)
_LONE_INITIAL = re.compile(rf"\s{_LETTER}[.] ")
_ACRONYM_THEN_STARTER = re.compile(rf"([A-Z][.][A-Z][.](?:[A-Z][.])?) {_STARTER}")
_THREE_LETTER_ACRONYM = re.compile(rf"{_LETTER}[.]{_LETTER}[.]{_LETTER}[.]")
_TWO_LETTER_ACRONYM = re.compile(rf"{_LETTER}[.]{_LETTER}[.]")
_SUFFIX = "(Inc|Ltd|Jr|Sr|Co)"
_SUFFIX_THEN_STARTER = re.compile(rf" {_SUFFIX}[.] {_STARTER}")
_SUFFIX_DOT = re.compile(rf" {_SUFFIX}[.]")
_INITIAL_AFTER_SPACE = re.compile(rf" {_LETTER}[.]")


def split_sentences_by_rules(text: str) -> list[str]:
    """Sentences of ``text`` by IFEval's regex rules, stripped, lines joined by spaces."""
    text = f" {text}  ".replace("\n", " ").replace(_DOT, "").replace(_STOP, "")
    text = _TITLE.sub(rf"\1{_DOT}", text)
    text = _WEBSITE.sub(rf"{_DOT}\1", text)
    text = _DECIMAL.sub(rf"\1{_DOT}\2", text)
    text = _DOTS.sub(lambda m: _DOT * len(m.group()) + _STOP, text)
    text = text.replace("Ph.D.", f"Ph{_DOT}D{_DOT}")
    text = _LONE_INITIAL.sub(rf" \1{_DOT} ", text)
    text = _ACRONYM_THEN_STARTER.sub(rf"\1{_STOP} \2", text)
    text = _THREE_LETTER_ACRONYM.sub(rf"\1{_DOT}\2{_DOT}\3{_DOT}", text)
    text = _TWO_LETTER_ACRONYM.sub(rf"\1{_DOT}\2{_DOT}", text)
    text = _SUFFIX_THEN_STARTER.sub(rf" \1{_STOP} \2", text)
    text = _SUFFIX_DOT.sub(rf" \1{_DOT}", text)
    text = _INITIAL_AFTER_SPACE.sub(rf" \1{_DOT}", text)
    # Closing quotes move inside the sentence before the mark that ends it.
    text = text.replace(".\u201d", "\u201d.").replace('."', '".')
    text = text.replace('!"', '"!').replace('?"', '"?')
    for mark in ".?!":
        text = text.replace(mark, mark + _STOP)
    sentences = [s.strip() for s in text.replace(_DOT, ".").split(_STOP)]
    if sentences and not sentences[-1]:
        sentences.pop()
    return sentences
