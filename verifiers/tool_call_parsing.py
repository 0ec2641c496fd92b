"""Tool-call parsing: model output (Hermes tags, JSON lists, TRL messages) -> ``ToolCall`` list."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_CALLS = 64  # more calls than this in one completion is degenerate output, not a plan
MAX_DEPTH = 32  # argument nesting deeper than this is degenerate and would strain recursion

_TAG_OPEN = "<tool_call>"
_TAG_CLOSE = "</tool_call>"
_FENCE = "```"


class ToolCallFormatError(ValueError):
    """Model output that tries to call a tool but is not a well-formed call."""


@dataclass(frozen=True)
class ToolCall:
    """One function call: a name and its keyword arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


def parse_tool_calls(output: Any) -> list[ToolCall]:
    """Every tool call in ``output``; ``[]`` when it makes none.

    ``output`` is completion text (Hermes/Qwen ``<tool_call>`` blocks, or the whole text being a
    JSON call or list of calls) or TRL messages/tool calls (lists of dicts). Raises
    ``ToolCallFormatError`` naming the problem when a call is malformed.
    """
    if isinstance(output, str):
        calls = _parse_text(output)
    elif isinstance(output, Sequence) and not isinstance(output, bytes):
        calls = _parse_structured(output)
    elif isinstance(output, Mapping):
        calls = _parse_structured([output])
    else:
        raise ToolCallFormatError(f"cannot read tool calls from {type(output).__name__}")
    if len(calls) > MAX_CALLS:
        raise ToolCallFormatError(f"{len(calls)} tool calls (limit {MAX_CALLS})")
    return calls


def _parse_text(text: str) -> list[ToolCall]:
    if _TAG_OPEN in text or _TAG_CLOSE in text:
        return _parse_tagged(text)
    stripped = _unfence(text.strip())
    if not stripped.startswith(("[", "{")):
        return []  # plain prose: no call
    try:
        data = _loads(stripped)
    except json.JSONDecodeError as exc:
        if stripped.startswith("{") or '"name"' in stripped:
            raise ToolCallFormatError(f"tool-call JSON does not parse: {exc}") from None
        return []
    if isinstance(data, list) and not data:
        return []
    return _parse_structured(data if isinstance(data, list) else [data])


def _unfence(text: str) -> str:
    """The body of a whole-text ```` ```json ```` fence, else the text. String operations, not a
    regex: a backtracking pattern took seconds on a fence followed by a few thousand spaces."""
    if len(text) < 2 * len(_FENCE) or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return text
    body = text[len(_FENCE) : -len(_FENCE)]
    return body.removeprefix("json").strip()


def _loads(text: str) -> Any:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ToolCallFormatError("tool-call JSON nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        # an integer past Python's digit limit: unparseable JSON, like any other bad number
        raise json.JSONDecodeError(f"number too long ({exc})", text, 0) from None
    if _depth(data) > MAX_DEPTH:
        raise ToolCallFormatError(f"tool-call JSON nested deeper than {MAX_DEPTH}")
    return data


def _depth(data: Any) -> int:
    deepest, stack = 0, [(data, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_DEPTH and isinstance(item, (list, dict)):
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _parse_tagged(text: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    pos = 0
    while (start := text.find(_TAG_OPEN, pos)) != -1:
        body_start = start + len(_TAG_OPEN)
        end = text.find(_TAG_CLOSE, body_start)
        # a final unclosed block is accepted when its JSON is complete (stop strings eat the tag)
        body = text[body_start:] if end == -1 else text[body_start:end]
        if end != -1 and _TAG_OPEN in body:
            raise ToolCallFormatError(f"nested {_TAG_OPEN} in call {len(calls) + 1}")
        calls.append(_call_from_json(body, len(calls) + 1))
        if end == -1:
            return calls
        pos = end + len(_TAG_CLOSE)
        if len(calls) > MAX_CALLS:
            break
    if not calls:
        raise ToolCallFormatError(f"{_TAG_CLOSE} without {_TAG_OPEN}")
    return calls


def _call_from_json(body: str, index: int) -> ToolCall:
    try:
        data = _loads(body.strip())
    except json.JSONDecodeError as exc:
        raise ToolCallFormatError(f"call {index}: JSON does not parse: {exc}") from None
    return _call_from_mapping(data, index)


def _parse_structured(items: Sequence[Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for item in items:
        if isinstance(item, Mapping) and "role" in item:  # a chat message
            calls.extend(_calls_of_message(item, len(calls)))
        else:
            calls.append(_call_from_mapping(item, len(calls) + 1))
    return calls


def _calls_of_message(message: Mapping[str, Any], done: int) -> list[ToolCall]:
    if message.get("role") != "assistant":
        return []  # tool results and user turns carry no calls of the model
    structured = message.get("tool_calls") or []
    if not isinstance(structured, Sequence):
        raise ToolCallFormatError("message tool_calls is not a list")
    calls = [_call_from_mapping(c, done + i + 1) for i, c in enumerate(structured)]
    content = message.get("content")
    if not calls and isinstance(content, str):
        calls = _parse_text(content)
    return calls


def _call_from_mapping(data: Any, index: int) -> ToolCall:
    if not isinstance(data, Mapping):
        raise ToolCallFormatError(f"call {index}: expected an object, got {type(data).__name__}")
    if isinstance(data.get("function"), Mapping):  # OpenAI/TRL {"type": "function", "function": {...}}
        data = data["function"]
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallFormatError(f"call {index}: missing or non-string 'name'")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI style: arguments as a JSON string
        try:
            arguments = _loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolCallFormatError(f"call {index} ({name}): arguments do not parse: {exc}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolCallFormatError(f"call {index} ({name}): arguments must be an object")
    return ToolCall(name.strip(), dict(arguments))


def render_tool_calls(calls: Sequence[ToolCall | Mapping[str, Any]]) -> str:
    """Hermes/Qwen text for ``calls``: one ``<tool_call>`` block per call (demonstrations, tests)."""
    blocks = []
    for call in calls:
        data = call.to_dict() if isinstance(call, ToolCall) else dict(call)
        payload = json.dumps({"name": data["name"], "arguments": data.get("arguments", {})})
        blocks.append(f"{_TAG_OPEN}\n{payload}\n{_TAG_CLOSE}")
    return "\n".join(blocks)


def completion_text(completion: Any) -> str:
    """Text of a completion with structured tool calls rendered back as ``<tool_call>`` blocks.

    TRL hands conversational completions as messages whose calls sit in ``tool_calls``, not in
    ``content``; joining only the contents would silently drop every call."""
    if not isinstance(completion, list):
        return completion if isinstance(completion, str) else "" if completion is None else str(completion)
    parts = []
    for message in completion:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        parts.append(content if isinstance(content, str) else "" if content is None else str(content))
        structured = message.get("tool_calls") or []
        if message.get("role") == "assistant" and isinstance(structured, list) and structured:
            try:
                parts.append(render_tool_calls(_parse_structured(structured)))
            except ToolCallFormatError as exc:  # keep the evidence: the verifier reports it
                parts.append(f"<tool_call>unreadable call: {exc}</tool_call>")
    return "\n".join(p for p in parts if p)
