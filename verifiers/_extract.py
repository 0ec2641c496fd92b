"""Find the final-answer span in a completion: last ``\\boxed{}``/``\\fbox{}``, ``Answer:`` line.

Shared by the math and science verifiers. Every scan is linear in the text length so a
megabyte of hostile output costs milliseconds, and no function here raises on any string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOX_COMMANDS = ("\\boxed", "\\fbox")
# "Answer: x", "**Final Answer:** x", "answer：x" at the start of a line (M2RL's convention).
_ANSWER_LINE = re.compile(
    r"^[ \t>*_#]*(?:the\s+)?(?:final\s+)?answer[ \t*_]*[:：][ \t*_]*(?P<body>[^\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)
_MATH_DELIMS = re.compile(
    r"^\s*(?:\$\$?|\\\(|\\\[)\s*(?P<inner>.*?)\s*(?:\$\$?|\\\)|\\\])\s*$", re.S
)


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


def last_boxed(text: str) -> Span | None:
    """The last balanced ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces allowed)."""
    starts = sorted(
        (m.start() for cmd in _BOX_COMMANDS for m in re.finditer(re.escape(cmd), text)),
        reverse=True,
    )
    if not starts:
        return None
    pairs = _closing_braces(text)
    for start in starts:
        brace = start + (6 if text.startswith("\\boxed", start) else 5)
        while brace < len(text) and text[brace] == " ":
            brace += 1
        if brace in pairs:
            return Span(text[brace + 1 : pairs[brace]].strip(), start, "boxed")
    return None


def last_answer_line(text: str) -> Span | None:
    """The body of the last line that starts with ``Answer:`` (markdown and "Final" allowed)."""
    last = None
    for m in _ANSWER_LINE.finditer(text):
        if m.group("body").strip():
            last = m
    if last is None:
        return None
    return Span(strip_decorations(last.group("body")), last.start(), "answer_line")


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
