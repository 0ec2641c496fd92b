"""Proof by rendering that a template with generation marks keeps the model's text and masks.

A marked template must render the model's own text, and its assistant mask must cover the
assistant's output and turn ends only, on conversations with every role, with and without
tools and ``enable_thinking``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.models.chat_format import turn_end_token_id

SYSTEM, TOOL_RESULT = "System probe S1.", "Tool probe T1."
USERS = ("User probe U1.", "User probe U2.")
ANSWERS = ("Assistant probe A1.", "Assistant probe A2.")
NOT_TRAINED = (SYSTEM, "User probe", TOOL_RESULT)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
            },
        },
    }
]
CALL = {"type": "function", "function": {"name": "lookup", "arguments": {"word": "probe"}}}


def _turn(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def probe_chats() -> list[tuple[list[dict[str, Any]], list | None]]:
    """(messages, tools) covering system, user, assistant and tool turns, multi-turn and
    reasoning in an earlier turn (which Qwen3's template drops)."""
    user, again = _turn("user", USERS[0]), _turn("user", USERS[1])
    first, second = _turn("assistant", ANSWERS[0]), _turn("assistant", ANSWERS[1])
    reasoned = _turn("assistant", "<think>\nReasoning probe R1.\n</think>\n\n" + ANSWERS[0])
    calling = _turn("assistant", "", tool_calls=[CALL])
    result = _turn("tool", TOOL_RESULT, name="lookup")
    system = _turn("system", SYSTEM)
    return [
        ([user, first], None),
        ([system, user, first, again, second], None),
        ([user, reasoned, again, reasoned], None),
        ([system, user, calling, result, second], TOOLS),
    ]


def option_sets(template_kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's options, and ``enable_thinking`` on and off beside them."""
    base = dict(template_kwargs)
    return [base, {**base, "enable_thinking": True}, {**base, "enable_thinking": False}]


def mark_problem(tokenizer: Any, original: str, marked: str, template_kwargs: Mapping[str, Any]) -> str | None:
    """Why ``marked`` is not ``original`` with a faithful assistant mask (None: it is)."""
    for messages, tools in probe_chats():
        for options in option_sets(template_kwargs):
            kwargs = {"tools": tools, **options}
            own = tokenizer.apply_chat_template(messages, tokenize=False, chat_template=original, **kwargs)
            ours = tokenizer.apply_chat_template(messages, tokenize=False, chat_template=marked, **kwargs)
            if own != ours:
                return f"with marks it renders {ours!r} instead of {own!r}"
            out = tokenizer.apply_chat_template(
                messages,
                tokenize=True,
                return_dict=True,
                return_assistant_tokens_mask=True,
                chat_template=marked,
                **kwargs,
            )
            problem = _mask_problem(tokenizer, messages, out["input_ids"], out["assistant_masks"])
            if problem:
                return f"{problem} in {own!r}"
    return None


def _mask_problem(tokenizer: Any, messages: Sequence[Mapping], ids: Sequence[int], mask: Sequence[int]) -> str | None:
    ends = {turn_end_token_id(tokenizer) or tokenizer.eos_token_id}
    specials = set(tokenizer.all_special_ids) - ends
    runs = masked_runs(ids, mask)
    text = "\n".join(tokenizer.decode(run) for run in runs)
    assistant = [m for m in messages if m["role"] == "assistant"]
    wanted = [m["content"].split("</think>")[-1].strip() for m in assistant]
    missing = [w for w in wanted if w and w not in text]
    if missing:
        return f"assistant text {missing[0]!r} is outside the mask"
    leaked = [probe for probe in NOT_TRAINED if probe in text]
    if leaked:
        return f"non-assistant text {leaked[0]!r} is inside the mask"
    if any(t in specials for run in runs for t in run):
        return "a special token other than the turn's end (e.g. a role header) is inside the mask"
    trained_ends = sum(1 for t, m in zip(ids, mask, strict=True) if m and t in ends)
    if trained_ends != len(assistant):
        return f"{trained_ends} turn-end tokens are inside the mask for {len(assistant)} turns"
    return None


def masked_runs(ids: Sequence[int], mask: Sequence[int]) -> list[list[int]]:
    """The masked token ids, one list per unbroken run."""
    runs: list[list[int]] = []
    previous = 0
    for token, bit in zip(ids, mask, strict=True):
        if bit and not previous:
            runs.append([])
        if bit:
            runs[-1].append(token)
        previous = bit
    return runs
