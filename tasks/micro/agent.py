"""Micro-suite agent rows: workplace tasks split by value or by prompt, with tool-call demonstrations.

Levels 1-2 come from the lite workplace (four tools, a short listing a tiny model can learn
from) over a procedural vocabulary split by value: held-out requests name contacts, words and
todos that no training request contains, so they measure copying from the request, not recall.
Levels 3-4 come from the full workplace, split by the prompt's hash. Either way train and
held-out rows never share a prompt or an id. Each prompt opens with a system message listing
the environment's tools one per line, exactly as the tiny chat template renders TRL's tools,
so text-only consumers (SFT, held-out replay) see what GRPO rollouts see.
"""

from __future__ import annotations

import inspect
import json
import random
import typing
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from tasks.environments import call_tool, get_environment_class, tool_names
from tasks.environments.workplace_lite import LEVELS as LITE_LEVELS
from tasks.environments.workplace_lite import Vocabulary, generate_lite_tasks
from tasks.environments.workplace_tasks import MAX_DIFFICULTY, generate_workplace_tasks
from tasks.micro._common import SPLITS, _even_counts, is_heldout, stable_hash, think, user_text
from tasks.schema import make_row, reference_of

LEVELS: tuple[int, ...] = tuple(range(1, MAX_DIFFICULTY + 1))
ENVIRONMENT = "workplace"
BATCH = 32  # candidate tasks drawn per attempt; about a fifth land in the held-out split
CLOSING = think("done", "Done.")  # the last turn, once the tools have answered
_TYPE_NAMES: dict[object, str] = {str: "str", int: "int", bool: "bool", float: "float", list: "list", dict: "dict"}


_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"
_TODO_VERBS = ("buy", "call", "pay", "walk", "fix", "read", "wash", "pack", "sell", "cook")
_TODO_NOUNS = (
    "milk",
    "rent",
    "dog",
    "sink",
    "book",
    "car",
    "bag",
    "bike",
    "cake",
    "keys",
    "gift",
    "lamp",
    "desk",
    "tea",
    "van",
    "hat",
)


def _split_pool(values: list[str], split: str) -> tuple[str, ...]:
    return tuple(v for v in values if is_heldout(("agent-value", v)) == (split == "heldout"))


@lru_cache(maxsize=len(SPLITS))
def vocabulary(split: str) -> Vocabulary:
    """The split's values: consonant-vowel names and words, verb-noun todo titles."""
    syllables = [a + v + b for a in _CONSONANTS for v in _VOWELS for b in _CONSONANTS]
    words = [a + v + b + w for a in _CONSONANTS for v in _VOWELS for b in _CONSONANTS[:7] for w in _VOWELS]
    todos = [f"{verb} {noun}" for verb in _TODO_VERBS for noun in _TODO_NOUNS]
    return Vocabulary(
        names=_split_pool(syllables, split),
        words=_split_pool(words, split),
        todos=_split_pool(todos, split),
    )


def _signature_line(method: Any) -> str:
    hints = typing.get_type_hints(method)
    params = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    parts = [
        f"{p.name}{'' if p.default is inspect.Parameter.empty else '?'}: {_TYPE_NAMES.get(hints.get(p.name), 'any')}"
        for p in params
    ]
    return f"{method.__name__}({', '.join(parts)})"


def tool_listing(environment: str = ENVIRONMENT) -> str:
    """``Tools:`` then one ``name(param: type, optional?: type)`` line per tool, sorted by name."""
    env_class = get_environment_class(environment)
    return "\n".join(["Tools:"] + [_signature_line(getattr(env_class, name)) for name in tool_names(env_class)])


def _levels(difficulty: int | Sequence[int] | None) -> tuple[int, ...]:
    if difficulty is None:
        return LEVELS
    levels = (difficulty,) if isinstance(difficulty, int) else tuple(difficulty)
    if not levels or any(lv not in LEVELS for lv in levels):
        raise ValueError(f"micro/agent: unknown difficulty {difficulty!r}; levels are {LEVELS}")
    return levels


def _micro_row(row: Mapping[str, Any], level: int, split: str, seen: Counter) -> dict[str, Any]:
    prompt, reference = user_text(row), reference_of(row)
    row_id = f"micro-agent-d{level}-{stable_hash(prompt + json.dumps(reference))[:12]}"
    seen[row_id] += 1
    if seen[row_id] > 1:  # the same task drawn again: a repeat, like the other micro domains
        row_id += f"-r{seen[row_id] - 1}"
    return make_row(
        prompt=[
            {"role": "system", "content": tool_listing(reference["environment"])},
            {"role": "user", "content": prompt},
        ],
        domain="agent",
        verifier=row["verifier"],
        reference=reference,
        source=f"micro/agent/{split}",
        id=row_id,
        environment=row["environment"],
    )


def _level_rows(level: int, count: int, seed: int, split: str) -> list[dict[str, Any]]:
    """``count`` rows of one level: lite levels from the split's vocabulary, full levels by
    rejection sampling on the prompt's hash."""
    rows: list[dict[str, Any]] = []
    seen: Counter = Counter()
    if level in LITE_LEVELS:
        batch_seed = int(stable_hash(f"micro:agent:{split}:{level}:{seed}")[:12], 16)
        lite = generate_lite_tasks(count, batch_seed, level, vocabulary(split))
        return [_micro_row(row, level, split, seen) for row in lite]
    for attempt in range(10 + count):
        if len(rows) == count:
            return rows
        batch_seed = int(stable_hash(f"micro:agent:{split}:{level}:{seed}:{attempt}")[:12], 16)
        for row in generate_workplace_tasks(BATCH, batch_seed, level):
            if is_heldout(user_text(row)) == (split == "heldout") and len(rows) < count:
                rows.append(_micro_row(row, level, split, seen))
    if len(rows) < count:
        raise ValueError(f"micro/agent: level {level} yielded too few {split} prompts")
    return rows


def generate(
    n: int, seed: int, difficulty: int | Sequence[int] | None = None, split: str = "train"
) -> list[dict[str, Any]]:
    """``n`` agent rows spread evenly over the requested levels, deterministic by seed."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
    levels = _levels(difficulty)
    rows = [
        row
        for level, count in zip(levels, _even_counts(n, len(levels)), strict=True)
        for row in _level_rows(level, count, seed, split)
    ]
    random.Random(f"micro:agent:{split}:order:{seed}").shuffle(rows)
    return rows


def _tool_call_text(call: Mapping[str, Any], environment: str) -> str:
    """One call, its arguments in the tool's parameter order: the order the request says them
    in ("Email ann: hi" -> to, body), so the model copies left to right."""
    arguments = call.get("arguments", {})
    method = getattr(get_environment_class(environment), call["name"], None)
    order = list(inspect.signature(method).parameters) if callable(method) else []
    ranked = sorted(arguments, key=lambda k: order.index(k) if k in order else len(order))
    payload = {"name": call["name"], "arguments": {k: arguments[k] for k in ranked}}
    return f"<tool_call>{json.dumps(payload, separators=(',', ':'))}</tool_call>"


def demonstration(prompt: str, reference: Mapping[str, Any]) -> str:
    """SFT target: the planned tool names in ``<think>``, then every gold call in one turn."""
    calls = reference["task"]["calls"]
    plan = ", ".join(dict.fromkeys(call["name"] for call in calls))
    environment = str(reference.get("environment", ENVIRONMENT))
    return think(plan, "\n".join(_tool_call_text(call, environment) for call in calls))


def tool_turns(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The demonstration turn and the tool messages it earns, as TRL's tool loop appends them:
    the conversation after which the model should write ``CLOSING``."""
    reference = reference_of(row)
    environment = get_environment_class(reference["environment"])()
    environment.reset(**row)
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": demonstration(user_text(row), reference)}]
    for call in reference["task"]["calls"]:
        result = call_tool(environment, call["name"], call.get("arguments", {}))
        messages.append({"role": "tool", "name": call["name"], "content": result})
    return messages
