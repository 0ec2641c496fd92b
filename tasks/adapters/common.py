"""Helpers shared by the dataset adapters: answer extraction, JSON fields, option lists."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tasks.quality import SkipRow, field_of
from tasks.spec import RowContext

_LETTER_LINE = re.compile(r"^\s*([A-Z])[.)]\s", re.MULTILINE)


def col(raw: Mapping[str, Any], name: str, ctx: RowContext) -> Any:
    """A required source field; a missing one is a setup error naming the column."""
    return field_of(raw, name, f"{ctx.spec.name} ({ctx.spec.source})")


def text(raw: Mapping[str, Any], name: str, ctx: RowContext) -> str:
    """A required non-empty text field; an empty one drops the row."""
    value = col(raw, name, ctx)
    if not isinstance(value, str) or not value.strip():
        raise SkipRow(f"empty {name}")
    return value


def json_field(value: Any, what: str) -> Any:
    """Decode a field that may hold JSON text (Hub datasets often store nested data as strings)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise SkipRow(f"{what} is not valid JSON") from None


def last_boxed(solution: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    start = max(solution.rfind("\\boxed{"), solution.rfind("\\fbox{"))
    if start < 0:
        return None
    i = solution.index("{", start) + 1
    depth = 1
    for j in range(i, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[j], 0)
        if depth == 0:
            return solution[i:j].strip()
    return None


def answer_ref(answer: Any) -> dict[str, str]:
    """A math reference; an empty gold answer is unscorable, so the row is dropped."""
    gold = "" if answer is None else str(answer).strip()
    if not gold:
        raise SkipRow("empty answer")
    return {"answer": gold}


def letter_count(question: str) -> int:
    """How many consecutive lettered option lines (``A. ...``) a question lists."""
    letters = {m.group(1) for m in _LETTER_LINE.finditer(question)}
    n = 0
    while chr(ord("A") + n) in letters:
        n += 1
    return n


def mcq_ref(letter: str, num_options: int) -> dict[str, Any]:
    letter = letter.strip().upper()
    if num_options < 2 or len(letter) != 1 or not "A" <= letter < chr(ord("A") + num_options):
        raise SkipRow("answer letter outside the options")
    return {"answer": letter, "num_options": num_options}


def messages_of(value: Any) -> list[dict[str, str]]:
    """Chat messages from a list of {role, content} (or ShareGPT {from, value}) dicts."""
    value = json_field(value, "messages")
    if not isinstance(value, list) or not value:
        raise SkipRow("no messages")
    out = []
    for m in value:
        role = m.get("role", m.get("from"))
        content = m.get("content", m.get("value"))
        if role is None or content is None:
            raise SkipRow("message without role or content")
        out.append({"role": {"human": "user", "gpt": "assistant"}.get(role, role), "content": content})
    return out
