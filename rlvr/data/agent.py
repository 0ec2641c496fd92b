"""Agent rows on the trainer side: environment routing, a tool-ready tokenizer, rollout scoring.

GRPO runs agent rows through TRL's ``environment_factory`` (a dict routed by the ``environment``
column; tool-free rows route to ``""``). Their rewards come from the live environment each
rollout acted on; rows without one are scored from text by the verifier (replay for agent rows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tasks.environments import NO_ENVIRONMENT, environment_factories, episode_verdict
from verifiers import Verdict
from verifiers.reasoning import THINK_CLOSE, THINK_OPEN, passes_format_gate
from verifiers.tool_call_parsing import completion_text
from verifiers.verdict import clip

log = logging.getLogger(__name__)

AGENT = "agent"
FOLLOW_UP_EVERY = 4  # every 4th agent demonstration teaches the turn after the tool results

Scorer = Callable[[list[tuple[str, dict, str]]], list[Verdict]]


def trainer_kwargs(environments: Iterable[str | None]) -> dict[str, Any]:
    """Extra ``GRPOTrainer`` arguments for a dataset's ``environment`` column: an
    ``environment_factory`` dict when any row names an environment, else nothing."""
    names = {name or NO_ENVIRONMENT for name in environments} - {NO_ENVIRONMENT}
    if not names:
        return {}
    log.info("environment_factory for %s (tool-free rows route to %r)", sorted(names), "")
    return {"environment_factory": environment_factories(names)}


def training_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as GRPO should see it: with an environment, TRL renders its tools through the chat
    template, so the prompt's own system tool listing (for text-only use) is dropped."""
    if not row.get("environment"):
        return dict(row)
    from tasks.micro.agent import tool_listing

    listing = {"role": "system", "content": tool_listing(row["environment"])}
    return {**row, "prompt": [m for m in row["prompt"] if dict(m) != listing]}


def prepare_tokenizer(tokenizer: Any) -> Any:
    """Give a tiny-template tokenizer saved without one the response template TRL parses
    ``<tool_call>`` blocks with; other tokenizers are left to TRL's known-template table."""
    from rlvr.models.tiny import CHAT_TEMPLATE, RESPONSE_TEMPLATE

    if getattr(tokenizer, "response_template", None) is None and (tokenizer.chat_template == CHAT_TEMPLATE):
        tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer


def rollout_text(completion: Any) -> str:
    """Completion text with TRL's parsed fields put back: each turn's ``reasoning_content`` as a
    ``<think>`` section and its structured tool calls as ``<tool_call>`` blocks."""
    if not isinstance(completion, list):
        return completion_text(completion)
    messages = []
    for message in completion:
        reasoning = message.get("reasoning_content") if isinstance(message, Mapping) else None
        if isinstance(reasoning, str):
            content = message.get("content") or ""
            message = {**message, "content": f"{THINK_OPEN}{reasoning}{THINK_CLOSE}\n{content}"}
        messages.append(message)
    return completion_text(messages)


def live_verdict(environment: Any, text: str, format_gate: bool) -> Verdict | None:
    """The episode verdict of a rollout's environment; None when it has nothing to score."""
    try:
        verdict = episode_verdict(environment)
    except Exception as exc:  # a scoring bug is an infrastructure error, never a silent 0
        log.warning("episode scoring raised %s: %s", type(exc).__name__, exc)
        return Verdict.error(clip(f"episode scoring raised {type(exc).__name__}: {exc}"))
    if verdict is not None and format_gate and not passes_format_gate(text):
        return Verdict.format_error("no </think>: the format gate requires a closed reasoning section")
    return verdict


def score_rollouts(
    items: list[tuple[str, dict, str]],
    rows: Sequence[int],
    environments: Sequence[Any] | None,
    scorer: Scorer,
    format_gate: bool = False,
) -> list[Verdict]:
    """Verdicts for batch positions ``rows`` (``items`` are their text, reference, verifier):
    the live episode where the rollout ran in an environment, the text scorer elsewhere."""
    verdicts: list[Verdict | None] = [
        live_verdict(environments[i], item[0], format_gate) if environments else None
        for i, item in zip(rows, items, strict=True)
    ]
    pending = [k for k, v in enumerate(verdicts) if v is None]
    if pending:
        for k, v in zip(pending, scorer([items[k] for k in pending]), strict=True):
            verdicts[k] = v
    return [v if v is not None else Verdict.error("rollout was not scored") for v in verdicts]


def sft_examples(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Prompt-completion examples for agent rows: mostly the tool-call turn; every
    ``FOLLOW_UP_EVERY``-th row instead the closing turn after the tools have answered."""
    from tasks.micro import demonstration
    from tasks.micro.agent import CLOSING, tool_turns

    examples = []
    for index, row in enumerate(rows):
        if index % FOLLOW_UP_EVERY == FOLLOW_UP_EVERY - 1:
            prompt, answer = [*row["prompt"], *tool_turns(row)], CLOSING
        else:
            prompt, answer = list(row["prompt"]), demonstration(row)
        examples.append(
            {
                "prompt": prompt,
                "completion": [{"role": "assistant", "content": answer}],
                "domain": row["domain"],
            }
        )
    return examples
