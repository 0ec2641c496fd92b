"""Pick the code to run out of a model completion (fenced Markdown blocks)."""

from __future__ import annotations

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
# A fence opens with ``` (optionally indented) and an info string without backticks; closes
# with ``` alone (a CRLF line end counts as blank). Matched with string operations: the equivalent regex backtracked
# quadratically on a fence line of many spaces ending in a backtick.
_FENCE = "```"
_BLANKS = " \t"


def extract_code(completion: str, allow_unfenced: bool = False) -> str | None:
    """The code block to grade, or None when there is none.

    Rule, in order:
    1. the last closed fenced block tagged ``python`` (or ``py``/``python3``);
    2. else the last closed fenced block of any (or no) language tag;
    3. else, if a fence was opened but never closed (generation cut at the token limit),
       everything after the last opening fence;
    4. else the whole completion, only when ``allow_unfenced``; otherwise None.
    """
    blocks, unclosed = _fenced_blocks(completion)
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    if unclosed is not None:
        return unclosed
    if allow_unfenced and completion.strip():
        return completion
    return None


def _fenced_blocks(text: str) -> tuple[list[tuple[str, str]], str | None]:
    """One linear pass over the lines: closed (tag, body) blocks and an unclosed tail, if any."""
    blocks: list[tuple[str, str]] = []
    tag: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if tag is None:
            info = _opening_info(line)
            if info is not None:
                tag, body = _tag(info), []
        elif line.strip(_BLANKS + "\r") == _FENCE:
            blocks.append((tag, "".join(part + "\n" for part in body)))
            tag = None
        else:
            body.append(line)
    return blocks, ("\n".join(body) if tag is not None else None)


def _opening_info(line: str) -> str | None:
    """The info string of an opening fence line, or None when the line opens no fence."""
    rest = line.lstrip(_BLANKS)
    if not rest.startswith(_FENCE) or "`" in rest[len(_FENCE) :]:
        return None
    return rest[len(_FENCE) :]


def _tag(info: str) -> str:
    words = info.strip().split()
    return words[0].lower() if words else ""
