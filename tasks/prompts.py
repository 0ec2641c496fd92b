"""Prompt formats: the system prompt and answer-format instruction each domain's rows carry."""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from dataclasses import dataclass

LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class PromptFormat:
    """How a task turns its question text into chat messages (M2RL-style instructions)."""

    name: str
    system: str = ""
    instruction: str = ""  # appended to the user message after a blank line

    def messages(self, user_text: str) -> list[dict[str, str]]:
        content = user_text.strip()
        if self.instruction:
            content = f"{content}\n\n{self.instruction}"
        out = [{"role": "system", "content": self.system}] if self.system else []
        return [*out, {"role": "user", "content": content}]


FORMATS: dict[str, PromptFormat] = {
    f.name: f
    for f in (
        PromptFormat(
            "math",
            instruction=(
                "Solve the problem step by step. Put the final answer on the last line as "
                "'Answer: <answer>' or inside \\boxed{}."
            ),
        ),
        PromptFormat(
            "science_mcq",
            instruction=(
                "Answer the multiple-choice question. End with a last line of the form "
                "'Answer: X' where X is the letter of the correct option."
            ),
        ),
        PromptFormat(
            "science_numeric",
            instruction="Give the final numeric answer on the last line as 'Answer: <number>'.",
        ),
        PromptFormat(
            "code",
            instruction=("Write a complete Python solution and return it in a single fenced ```python code block."),
        ),
        PromptFormat(
            "code_stdio",
            instruction=(
                "Write a Python program that reads from standard input and writes to standard "
                "output. Return it in a single fenced ```python code block."
            ),
        ),
        PromptFormat("instruction"),  # IFEval-style: the prompt is the whole task
        PromptFormat(
            "tool_calls",
            system=(
                "You can call the functions described below. To call functions, reply with "
                'a JSON list of calls: [{"name": "<function>", "arguments": {...}}]. '
                "Reply with [] if no function fits the request."
            ),
        ),
        PromptFormat("agent"),  # the environment supplies tools and instructions
        PromptFormat("as_is"),  # the source already carries its own instructions
    )
}


def get_format(name: str) -> PromptFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown prompt format {name!r}; known formats: {', '.join(sorted(FORMATS))}") from None


def build_prompt(format_name: str, user_text: str) -> list[dict[str, str]]:
    """Chat messages for ``user_text`` in the named format."""
    return get_format(format_name).messages(user_text)


def format_mcq(question: str, options: Sequence[str]) -> str:
    """A question followed by its options as ``A. ...`` lines."""
    if len(options) > len(LETTERS):
        raise ValueError(f"too many options ({len(options)}); at most {len(LETTERS)}")
    lines = [f"{LETTERS[i]}. {str(opt).strip()}" for i, opt in enumerate(options)]
    return question.strip() + "\n\n" + "\n".join(lines)


def tool_prompt(user_text: str, functions: Sequence[object]) -> list[dict[str, str]]:
    """Tool-calling messages: the function docs go into the system prompt as JSON."""
    fmt = get_format("tool_calls")
    docs = json.dumps(list(functions), ensure_ascii=False, indent=1)
    return [
        {"role": "system", "content": f"{fmt.system}\n\nFunctions:\n{docs}"},
        {"role": "user", "content": user_text.strip()},
    ]
