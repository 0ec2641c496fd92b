"""Chat templates marked for TRL's assistant-only SFT loss, rendering exactly the model's text.

TRL's ``assistant_only_loss`` trains the tokens a template renders inside ``{% generation %}``
... ``{% endgeneration %}``. Most model templates lack the marks, and TRL's own training
variants change the text (Qwen3's renders a think block in every assistant turn), so the model
would be fine-tuned on conversations it never sees at inference. Here the marks are added to
the model's own template around what the assistant generates (its content, reasoning and tool
calls, and the token that ends its turn, not the role header), and the result is checked by
rendering: the same text on conversations with every role, with and without tools and
``enable_thinking``, and a mask over the assistant's words and turn ends only. A template that
cannot be marked fails before any model loads, naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rlvr.config import ConfigError
from rlvr.models.template_checks import mark_problem

_MARK = re.compile(r"\{%-?\s*generation\s*-?%\}")
# Qwen3's assistant branch: between its ``elif`` for the assistant and the one for tools.
_ASSISTANT_BRANCH = re.compile(
    r"(\{%-?\s*elif message\.role == [\"']assistant[\"']\s*-?%\})(.*?)"
    r"(\{%-?\s*elif message\.role == [\"']tool[\"']\s*-?%\})",
    re.DOTALL,
)
# The role header and what follows it in one expression, e.g.
# {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning + ... + content }}
_HEADER = re.compile(
    r"\{\{-?\s*'<\|im_start\|>' \+ message\.role \+ '\\n(?P<think>(?:<think>\\n)?)'"
    r"(?P<rest>[^{}]*?)\s*-?\}\}"
)
_TOOL_CALLS = re.compile(r"(\{%-?\s*for tool_call in message\.tool_calls\s*-?%\}.*?\{%-?\s*endfor\s*-?%\})", re.DOTALL)
_TURN_END = "{{- '<|im_end|>\\n' }}"
_OPEN, _CLOSE = "{%- generation %}", "{%- endgeneration %}"


def has_generation_marks(template: str) -> bool:
    return bool(_MARK.search(template))


def marked_template(tokenizer: Any, template_kwargs: Mapping[str, Any] | None = None) -> str:
    """The tokenizer's chat template with generation marks (as is when it has them), checked
    to render the model's text; a ``ConfigError`` naming the fix when it cannot be marked."""
    template = tokenizer.chat_template
    if not isinstance(template, str) or not template:
        raise ConfigError(
            "assistant-only SFT loss on chat (messages) data needs the tokenizer's chat "
            "template, and this tokenizer has none (or several named ones): give the model "
            "folder a chat_template with {% generation %} marks"
        )
    if has_generation_marks(template):
        return template
    marked = mark_chatml_template(template)
    if marked is None:
        raise ConfigError(_cannot_mark("its assistant turns are not shaped as Qwen3's"))
    problem = mark_problem(tokenizer, template, marked, dict(template_kwargs or {}))
    if problem:
        raise ConfigError(_cannot_mark(problem))
    return marked


def mark_chatml_template(template: str) -> str | None:
    """Qwen3-style ChatML with marks around the assistant's output (None: not that shape)."""
    branch = _ASSISTANT_BRANCH.search(template)
    if branch is None:
        return None
    body = branch.group(2)
    body, headers = _HEADER.subn(_marked_header, body)
    if headers == 0 or body.count(_TURN_END) != 1:
        return None
    body = _TOOL_CALLS.sub(lambda m: _OPEN + m.group(1) + _CLOSE, body, count=1)
    body = body.replace(_TURN_END, _OPEN + "{{- '<|im_end|>' }}" + _CLOSE + "{{- '\\n' }}")
    start, end = branch.span(2)
    return template[:start] + body + template[end:]


def _marked_header(match: re.Match) -> str:
    """The header on its own, then the rest of the expression inside a generation block."""
    rest = match.group("rest").strip()
    if match.group("think"):
        generated = "'<think>\\n' " + rest
    elif rest.startswith("+"):
        generated = rest[1:].strip()
    else:
        return match.group(0)
    header = "{{- '<|im_start|>' + message.role + '\\n' }}"
    return header + _OPEN + "{{- " + generated + " }}" + _CLOSE


def _cannot_mark(why: str) -> str:
    return (
        f"cannot add {{% generation %}} marks to this model's chat template ({why}); "
        "assistant-only SFT loss needs them: save the model folder with a chat template whose "
        "assistant output (content, tool calls and the turn's end token) sits inside "
        "{% generation %} ... {% endgeneration %}, or train on prompt/completion data "
        "(loss on the completion only)"
    )
