"""Pick the code to run out of a model completion (fenced Markdown blocks)."""

from __future__ import annotations

import re

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
# A fence opens with ``` (optionally indented), an info string, a newline; closes with ``` alone.
_BLOCK = re.compile(r"^[ \t]*```[ \t]*([^\n`]*)\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_OPEN = re.compile(r"^[ \t]*```[ \t]*([^\n`]*)\n", re.M)


def extract_code(completion: str, allow_unfenced: bool = False) -> str | None:
    """The code block to grade, or None when there is none.

    Rule, in order:
    1. the last closed fenced block tagged ``python`` (or ``py``/``python3``);
    2. else the last closed fenced block of any (or no) language tag;
    3. else, if a fence was opened but never closed (generation cut at the token limit),
       everything after the last opening fence;
    4. else the whole completion, only when ``allow_unfenced``; otherwise None.
    """
    blocks = [(_tag(info), body) for info, body in _BLOCK.findall(completion)]
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    opened = list(_OPEN.finditer(completion))
    if opened:
        return completion[opened[-1].end() :]
    if allow_unfenced and completion.strip():
        return completion
    return None


def _tag(info: str) -> str:
    words = info.strip().split()
    return words[0].lower() if words else ""
