"""IFEval checkers on structure: length, paragraphs, sections, lists, markup, JSON, repeats.

Same calling convention as ``checks_lexical``. Pattern searches are written as line scans
or single-pass regexes so any response, however long or hostile, is checked in linear time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from verifiers.ifeval.text import compare, count_sentences, count_words

_PARAGRAPH_RULE = re.compile(r"\s?\*\*\*\s?")  # IFEval's "***" paragraph divider
_HIGHLIGHT = re.compile(r"\*[^\n*]*\*")
_DOUBLE_HIGHLIGHT = re.compile(r"\*\*[^\n*]*\*\*")
_CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
_JSON_FENCES = ("```json", "```Json", "```JSON", "```")


def number_sentences(response: str, *, num_sentences: int, relation: str) -> bool:
    """length_constraints:number_sentences."""
    return compare(count_sentences(response), relation, num_sentences)


def number_words(response: str, *, num_words: int, relation: str) -> bool:
    """length_constraints:number_words."""
    return compare(count_words(response), relation, num_words)


def number_paragraphs(response: str, *, num_paragraphs: int) -> bool:
    """length_constraints:number_paragraphs: exactly N parts divided by ``***``.

    An empty part is allowed only before the first or after the last divider.
    """
    parts = _PARAGRAPH_RULE.split(response)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
            count -= 1
    return count == num_paragraphs


def _first_word(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = re.match(r"[^.,?!'\"]*", word)
    return first.group().lower() if first else ""


def nth_paragraph_first_word(response: str, *, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    """length_constraints:nth_paragraph_first_word: N blank-line paragraphs; the nth starts
    with ``first_word`` (case-insensitive, trailing punctuation ignored)."""
    if not 1 <= nth_paragraph <= num_paragraphs:
        raise ValueError(f"nth_paragraph={nth_paragraph} is not in 1..{num_paragraphs}")
    paragraphs = response.split("\n\n")
    count = sum(1 for p in paragraphs if p.strip())
    if not 1 <= nth_paragraph <= count:
        return False
    paragraph = paragraphs[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    return count == num_paragraphs and _first_word(paragraph) == first_word.strip().lower()


def _count_bracketed(line: str) -> int:
    """Non-overlapping ``[...]`` spans on one line, as ``re.findall(r"\\[.*?\\]")`` counts."""
    count, position = 0, 0
    while (opening := line.find("[", position)) >= 0:
        closing = line.find("]", opening + 1)
        if closing < 0:
            break  # no later "[" on this line can close either
        count, position = count + 1, closing + 1
    return count


def number_placeholders(response: str, *, num_placeholders: int) -> bool:
    """detectable_content:number_placeholders: at least N ``[placeholder]`` spans."""
    found = sum(_count_bracketed(line) for line in response.split("\n"))
    return found >= num_placeholders


def postscript(response: str, *, postscript_marker: str) -> bool:
    """detectable_content:postscript: the marker (``P.S.``, ``P.P.S`` ...) appears."""
    text = response.lower()
    if postscript_marker == "P.P.S":
        pattern = r"p\.\s?p\.\s?s"
    elif postscript_marker == "P.S.":
        pattern = r"p\.\s?s\."
    else:  # IFEval reads other markers as patterns; a literal match is what authors mean
        pattern = re.escape(postscript_marker.lower())
    return re.search(pattern, text) is not None


def constrained_response(response: str) -> bool:
    """detectable_format:constrained_response: contains one of the three fixed answers."""
    text = response.strip()
    return any(option in text for option in _CONSTRAINED)


def json_format(response: str) -> bool:
    """detectable_format:json_format: the whole response (code fences allowed) is JSON."""
    text = response.strip()
    for fence in _JSON_FENCES:
        text = text.removeprefix(fence)
    text = text.removesuffix("```").strip()
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def multiple_sections(response: str, *, section_spliter: str, num_sections: int) -> bool:
    """detectable_format:multiple_sections: at least N ``<spliter> <number>`` headers."""
    splitter = re.compile(rf"\s?{re.escape(section_spliter)}\s?\d+\s?")
    return len(splitter.split(response)) - 1 >= num_sections


def _count_bullets(lines: list[str]) -> int:
    """Lines that start (after spaces) with ``-``, or with ``*`` but not ``**``."""
    dashes = sum(1 for line in lines if line.lstrip().startswith("-"))
    stars, index = 0, 0
    while index < len(lines):
        item = lines[index].lstrip()
        if item.startswith("*") and not item.startswith("**"):
            if len(item) > 1:
                stars += 1
            elif index + 1 < len(lines):  # a bare "*" takes the next line as its text
                stars, index = stars + 1, index + 1
        index += 1
    return dashes + stars


def number_bullet_lists(response: str, *, num_bullets: int) -> bool:
    """detectable_format:number_bullet_lists: exactly N markdown bullet points."""
    return _count_bullets(response.split("\n")) == num_bullets


def number_highlighted_sections(response: str, *, num_highlights: int) -> bool:
    """detectable_format:number_highlighted_sections: at least N ``*highlighted*`` spans."""
    single = sum(1 for m in _HIGHLIGHT.findall(response) if m.strip("*").strip())
    double = sum(1 for m in _DOUBLE_HIGHLIGHT.findall(response) if m[2:-2].strip())
    return single + double >= num_highlights


def title(response: str) -> bool:
    """detectable_format:title: a non-empty ``<<title>>`` on one line."""
    for line in response.split("\n"):
        opening, closing = line.find("<<"), line.rfind(">>")
        if opening >= 0 and closing >= opening + 3:
            if line[opening : closing + 2].lstrip("<").rstrip(">").strip():
                return True
    return False


def repeat_prompt(response: str, *, prompt_to_repeat: str) -> bool:
    """combination:repeat_prompt: starts with the request, repeated word for word."""
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


def two_responses(response: str) -> bool:
    """combination:two_responses: two different non-empty answers divided by ``******``."""
    parts = response.split("******")
    answers = []
    for index, part in enumerate(parts):
        if part.strip():
            answers.append(part.strip())
        elif index not in (0, len(parts) - 1):
            return False
    return len(answers) == 2 and answers[0] != answers[1]


LAYOUT_CHECKS: dict[str, Callable[..., bool]] = {
    "length_constraints:number_sentences": number_sentences,
    "length_constraints:number_words": number_words,
    "length_constraints:number_paragraphs": number_paragraphs,
    "length_constraints:nth_paragraph_first_word": nth_paragraph_first_word,
    "detectable_content:number_placeholders": number_placeholders,
    "detectable_content:postscript": postscript,
    "detectable_format:constrained_response": constrained_response,
    "detectable_format:json_format": json_format,
    "detectable_format:multiple_sections": multiple_sections,
    "detectable_format:number_bullet_lists": number_bullet_lists,
    "detectable_format:number_highlighted_sections": number_highlighted_sections,
    "detectable_format:title": title,
    "combination:repeat_prompt": repeat_prompt,
    "combination:two_responses": two_responses,
}
