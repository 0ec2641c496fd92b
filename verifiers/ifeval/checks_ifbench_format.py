"""IFBench's layout and copying checkers: nesting, options, lines, bullets, case, repeats.

Same calling convention as ``checks_lexical``; semantics follow allenai/IFBench's
``instructions.py``, quirks included (``format:line_indent`` drops blank lines the way a
list mutated while iterated does; ``format:no_bullets_bullets`` stops counting sentences at
a blank line). ``format:emoji`` asks ``estimates.is_emoji`` where IFBench asks the emoji
package, and ``nltk.word_tokenize`` is approximated by ``text.nltk_word_tokens``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from verifiers.ifeval.estimates import is_emoji
from verifiers.ifeval.text import Verbatim, nltk_word_tokens, split_sentences

_PAIRS = {")": "(", "]": "[", "}": "{"}
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_STRIP = string.punctuation + " "
_ABC_OPTIONS = re.compile(r"\W*[aA]\W*[bB]\W*[cC]\W*")
_REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."
_TEMPLATE = ("My Answer:", "My Conclusion:", "Future Outlook:")


def parentheses(response: str) -> bool:
    """format:parentheses: brackets of any kind nested at least five deep, closed in order;
    a mismatched closer resets the count."""
    deepest = 0
    stack: list[str] = []
    for char in response:
        if char in "([{":
            stack.append(char)
            deepest = max(deepest, len(stack))
        elif char in _PAIRS:
            if stack and stack[-1] == _PAIRS[char]:
                stack.pop()
                if deepest >= 5 and len(stack) < deepest:
                    return True
            else:
                stack, deepest = [], 0
    return False


def quotes(response: str) -> bool:
    """format:quotes: quotation marks nested three deep, alternating ``"`` and ``'``."""
    stack: list[str] = []
    reached = 0
    for char in response:
        if stack and char == stack[-1]:
            stack.pop()
            if reached - len(stack) >= 3:
                return True
        elif char in "\"'":
            stack.append(char)
            reached = max(reached, len(stack))
    return False


def _split_options(options: str) -> list[str]:
    separator = "/" if "/" in options else "or" if "or" in options else ","
    return [option.strip() for option in options.split(separator)]


def options(response: str, *, options: str) -> bool:
    """format:options: the response is one of the options. Lettered options (``a), b), c)``)
    must match exactly; others ignore case and outer punctuation."""
    choices = _split_options(options)
    if _ABC_OPTIONS.match(options):
        return response in choices
    answer = response.strip(_STRIP).lower()
    return any(choice.strip(_STRIP).lower() == answer for choice in choices)


def newline(response: str) -> bool:
    """format:newline: one word per line (punctuation removed, blank lines ignored)."""
    text = response.translate(_NO_PUNCTUATION).strip()
    lines = [line for line in text.split("\n") if line != ""]
    return len(lines) == len(text.split())


def _ends_with_emoji(text: str) -> bool:
    return is_emoji(text[-1]) or is_emoji(text[-2] if len(text) > 1 else text[-1])


def emoji(response: str) -> bool:
    """format:emoji: every sentence ends with an emoji; one that the sentence splitter put
    at the start of the next sentence also counts."""
    sentences = [s.translate(_NO_PUNCTUATION).strip() for s in split_sentences(response)]
    for index, sentence in enumerate(sentences):
        if not sentence:
            return False
        if _ends_with_emoji(sentence):
            continue
        following = sentences[index + 1] if index + 1 < len(sentences) else ""
        if not following or not is_emoji(following[0]):
            return False
    return True


def _drop_blank_lines(lines: list[str]) -> list[str]:
    """Blank lines removed as IFBench removes them, from the list it iterates over: a
    visited blank line removes the earliest remaining line equal to it, and the line after
    it escapes the visit. Removals never reach past the visited line, so the visits are
    known from the original list, and this takes linear time where list.remove does not."""
    removals: Counter[str] = Counter()
    index = 0
    while index < len(lines):
        if not lines[index].strip():
            removals[lines[index]] += 1
            index += 2
        else:
            index += 1
    kept = []
    for line in lines:
        if removals[line]:
            removals[line] -= 1
        else:
            kept.append(line)
    return kept


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def line_indent(response: str) -> bool:
    """format:line_indent: each line is indented by more spaces than the line before."""
    lines = _drop_blank_lines(response.split("\n"))
    return all(_indent(b) > _indent(a) for a, b in zip(lines, lines[1:], strict=False))


def quote_unquote(response: str) -> bool:
    """format:quote_unquote: no quotation directly follows another (whitespace aside) and
    the response does not end on a quotation."""
    text = "".join(response.replace("'\"'", "").split())
    if '""' in text:
        return False
    tail = text.strip(string.digits + string.punctuation.replace('"', ""))
    return not (tail and tail[-1] == '"')


def bullet_marker(response: str, *, sep: str) -> bool:
    """format:list: the chosen bullet marker appears at least twice."""
    return response.count(sep) >= 2 if sep else False


def thesis(response: str) -> bool:
    """format:thesis: an ``<i>``/``<em>`` thesis with text, then more text after it."""
    start = response.find("<i>")
    if start < 0:
        start = response.find("<em>")
        if start < 0:
            return False
    rest = response[start:]
    end = rest.find("</i>")
    if end < 0:
        end = rest.find("</em>")
        if end < 0:
            return False
    # IFBench slices with the lengths of <i> and </i> whichever tags were used.
    return bool(rest[3:end].strip()) and bool(rest[end + 4 :].strip())


def sub_bullets(response: str) -> bool:
    """format:sub-bullets: after every ``*`` a ``-`` comes before the next ``*``."""
    return all("-" in part for part in response.split("*")[1:])


def no_bullets_bullets(response: str) -> bool:
    """format:no_bullets_bullets: two or more sentences, then two or more ``*`` bullets and
    nothing else."""
    in_sentences, sentences, bullets = True, 0, 0
    for line in response.split("\n"):
        if line.strip().startswith("*"):
            in_sentences = False
            if sentences < 2:
                return False
            bullets += 1
        elif in_sentences:
            found = split_sentences(line.strip())
            in_sentences = bool(found)  # IFBench keeps the (possibly empty) list as its flag
            sentences += len(found)
        else:
            return False
    return bullets >= 2


def title_case(response: str) -> bool:
    """format:title_case: no word starts lowercase (tokens not starting with a letter and
    all-capital words pass)."""
    for word in nltk_word_tokens(response):
        if not word[0].isalpha():
            continue
        if word[0].islower():
            if len(word) == 1 or word[1:].isupper() or word[1:].islower():
                return False
    return True


def output_template(response: str) -> bool:
    """format:output_template: the three template headings all appear."""
    return all(heading in response for heading in _TEMPLATE)


def no_whitespace(response: str) -> bool:
    """format:no_whitespace: the response contains no whitespace character."""
    return not any(char.isspace() for char in response)


def repeat_change(response: str, *, prompt_to_repeat: Verbatim) -> bool:
    """repeat:repeat_change: the request repeated with its first word changed."""
    if response == prompt_to_repeat:
        return False
    return prompt_to_repeat.split()[1:] == response.split()[1:]


def repeat_simple(response: str) -> bool:
    """repeat:repeat_simple: the response is the fixed sentence IFBench asks for."""
    return response.strip().lower() == _REPEAT_SIMPLE.lower()


def repeat_span(response: str, *, prompt_to_repeat: Verbatim, n_start: int, n_end: int) -> bool:
    """repeat:repeat_span: the response is the request's characters n_start..n_end, both
    ends included."""
    if n_start > n_end:
        raise ValueError(f"n_start={n_start} is after n_end={n_end}")
    span = prompt_to_repeat[n_start : n_end + 1]
    return response.strip().lower() == span.strip().lower()


IFBENCH_FORMAT_CHECKS: dict[str, Callable[..., bool]] = {
    "format:parentheses": parentheses,
    "format:quotes": quotes,
    "format:options": options,
    "format:newline": newline,
    "format:emoji": emoji,
    "format:line_indent": line_indent,
    "format:quote_unquote": quote_unquote,
    "format:list": bullet_marker,
    "format:thesis": thesis,
    "format:sub-bullets": sub_bullets,
    "format:no_bullets_bullets": no_bullets_bullets,
    "format:title_case": title_case,
    "format:output_template": output_template,
    "format:no_whitespace": no_whitespace,
    "repeat:repeat_change": repeat_change,
    "repeat:repeat_simple": repeat_simple,
    "repeat:repeat_span": repeat_span,
}
