"""Find the final-answer span in a completion: last ``\\boxed{}``/``\\fbox{}``, ``Answer:`` line.

Shared by the math and science verifiers. Every scan is linear in the text length so a
megabyte of hostile output costs milliseconds, and no function here raises on any string.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_BOX_COMMANDS = ("\\boxed", "\\fbox")
# "Answer: x", "**Final Answer:** x", "answer：x" at the start of a line (M2RL's convention),
# or "Final Answer:" anywhere in a line ("... so the Final Answer: 12"); the body stops
# before a later marker on the same line, so the last marker wins.
_MARKER = r"(?:^[ \t>*_#]*(?:the\s+)?(?:final\s+)?answer|\bfinal[ \t]+answer)[ \t*_]*[:：]"
_ANSWER_LINE = re.compile(
    _MARKER + r"[ \t*_]*(?P<body>(?:(?!\bfinal[ \t]+answer[ \t*_]*[:：])[^\n])*)",
    re.IGNORECASE | re.MULTILINE,
)
MAX_BOX_GAP = 80  # separators between boxes of one answer are short
MAX_RUN = 64  # boxes joined into one answer at most; a longer list is no answer anyway
_BOX_GAP = re.compile(
    r"(?:\s|[,;&$]|\\[()\[\],;:! ]|\\q?quad\b|\b(?:and|or)\b"
    r"|\\(?:text|mbox|textrm|mathrm)\s*\{\s*(?:,|and|or)?\s*\})*",
    re.IGNORECASE,
)
MAX_PROSE_CHARS = 2_000
# Prose answer lines ("Final Answer: The final answer is $28\\%$. I hope it is correct.").
_INLINE_MATH = re.compile(r"\$\$?[^$]*\$\$?|\\\((?:(?!\\\)).)*\\\)|\\\[(?:(?!\\\]).)*\\\]", re.S)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+(?:\s*\{[^{}]*\})?")
_WORD = re.compile(r"[A-Za-z]{3,}")
_SENTENCE_END = re.compile(r"\.(?=\s+[A-Z<(\[])|\s+I hope\b")
_COPULA = re.compile(r"(?:\b(?:is|are|equals)\b|=)\s*", re.IGNORECASE)
_PROSE_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_MATH_DELIMS = re.compile(r"^\s*(?:\$\$?|\\\(|\\\[)\s*(?P<inner>.*?)\s*(?:\$\$?|\\\)|\\\])\s*$", re.S)


@dataclass(frozen=True)
class Span:
    """An extracted answer and where it started in the completion (later spans win)."""

    text: str
    start: int
    kind: str  # "boxed" | "answer_line" | "last_number" | ...


def _closing_braces(text: str) -> dict[int, int]:
    """Index of each ``{`` -> index of its matching ``}`` (one linear pass; unmatched omitted)."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs[stack.pop()] = i
    return pairs


def _boxes(text: str) -> list[tuple[int, int, int]]:
    """Every balanced box as (start of the command, its ``{``, its ``}``), in text order."""
    starts = sorted(m.start() for cmd in _BOX_COMMANDS for m in re.finditer(re.escape(cmd), text))
    if not starts:
        return []
    pairs = _closing_braces(text)
    boxes = []
    for start in starts:
        brace = start + (6 if text.startswith("\\boxed", start) else 5)
        while brace < len(text) and text[brace] == " ":
            brace += 1
        if brace in pairs:
            boxes.append((start, brace, pairs[brace]))
    return boxes


def last_boxed(text: str) -> Span | None:
    """The last balanced ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces allowed).

    Boxes written one after another with only separators between them (commas, "and",
    "or", ``\\quad``, math delimiters: ``\\boxed{1}, \\boxed{2}``) are one answer, a list
    ``1, 2`` that math-verify reads as a set; any other text between boxes ends the run,
    so ``\\boxed{3} ... no, \\boxed{4}`` is ``4``.
    """
    boxes = _boxes(text)
    if not boxes:
        return None
    run = _final_run(text, [(b[0], b[2] + 1) for b in boxes])
    parts = [strip_decorations(text[b[1] + 1 : b[2]]) for b in boxes[-run:]]
    return Span(", ".join(parts), boxes[-1][0], "boxed")


def _final_run(text: str, items: list[tuple[int, int]]) -> int:
    """How many of the last (start, end) items are written as one list (separators only)."""
    run = 1
    pairs = zip(reversed(items[:-1]), reversed(items[1:]), strict=True)
    for (_, end), (start, _) in itertools.islice(pairs, MAX_RUN - 1):
        if end > start or start - end > MAX_BOX_GAP:
            break  # nested in the next item, or too far from it
        if not _BOX_GAP.fullmatch(text[end:start]):
            break
        run += 1
    return run


def last_answer_line(text: str) -> Span | None:
    """The body after the last ``Answer:`` line start or ``Final Answer:`` (markdown allowed)."""
    last = None
    for m in _ANSWER_LINE.finditer(text):
        if m.group("body").strip():
            last = m
    if last is None:
        return None
    return Span(strip_decorations(last.group("body")), last.start(), "answer_line")


def answer_in_prose(body: str) -> str:
    """The answer inside a prose answer line: ``The largest $n$ is 34.`` -> ``34``.

    Applies only when the body holds a word outside math (three or more letters, not a
    LaTeX command); anything else is returned as is. The first sentence is kept, then the
    text after its first "is"/"are"/"equals"/"=" outside math; of that, the last ``$...$``
    span (or run of spans, joined as boxes are), else its only number. When none of these
    narrows it, the body is returned whole.
    """
    head = body[:MAX_PROSE_CHARS]  # the answer sits in the first sentence; bounds the scans
    if not _is_prose(head):
        return body
    sentence = _SENTENCE_END.split(head, maxsplit=1)[0]
    masked = _INLINE_MATH.sub(lambda m: "#" * len(m.group()), sentence)
    copula = _COPULA.search(masked)
    tail = sentence[copula.end() :] if copula else sentence
    if not _is_prose(tail):
        return strip_decorations(tail) or body
    spans = [m.span() for m in _INLINE_MATH.finditer(tail)]
    if spans:  # the last formula, or the last run of them ("$12$ and $13$")
        run = spans[-_final_run(tail, spans) :]
        return ", ".join(strip_decorations(tail[a:b]) for a, b in run)
    numbers = _PROSE_NUMBER.findall(tail)
    return numbers[0].rstrip(",") if len(numbers) == 1 else body


def _is_prose(text: str) -> bool:
    outside = _LATEX_COMMAND.sub(" ", _INLINE_MATH.sub(" ", text))
    return _WORD.search(outside) is not None


def strip_decorations(answer: str) -> str:
    """Drop markdown emphasis, math delimiters and a trailing full stop around an answer."""
    s = answer.strip()
    for _ in range(3):  # wrappers nest at most a few levels ("**$x$**.")
        before = s
        s = s.strip().strip("*_").strip()
        if s.endswith("."):
            s = s[:-1].rstrip()
        m = _MATH_DELIMS.match(s)
        if m:
            s = m.group("inner")
        if s == before:
            break
    return s.strip()


def final_span(text: str) -> Span | None:
    """The later of the last ``\\boxed{}`` and the last ``Answer:`` line.

    A box inside the answer line starts after the line, so ``Answer: \\boxed{5}`` yields ``5``.
    """
    spans = [s for s in (last_boxed(text), last_answer_line(text)) if s is not None]
    return max(spans, key=lambda s: s.start) if spans else None


def max_brace_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == "}":
            depth = max(0, depth - 1)
    return deepest
