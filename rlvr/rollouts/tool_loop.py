"""GRPO's tool loop for agent rows, run as batched KV-cached episodes instead of TRL's re-encoding loop.

TRL 1.16 generates every rollout's first turn with ``model.generate``, then loops: run the
tools, re-encode prompt + completion + tool results, ``generate`` again for the rows that called
tools, each call padded to the longest row. Here every rollout runs as a whole episode on
``rlvr.evaluation.multiturn`` (each row keeps its cache across turns, all rows decode together,
finished rows leave) and TRL gets what its loop returns: completion ids with the tool results
spliced in, the tool mask (0 on tool-result ids), the parsed messages, the tool call and failure
counts. Each turn follows TRL's rules: calls dispatched by name to the rollout's environment
(a failing or unknown tool answers ``{"error": ...}``), results that would overflow
``max_completion_length`` or the model's context dropped (the rollout ends on its tool-call
turn), at most ``max_tool_calling_iterations`` tool rounds, TRL's own tool-suffix ids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.evaluation.multiturn import TurnSampling, sample_episodes
from rlvr.rollouts import generation_context
from rlvr.rollouts import unsupported as sampler_unsupported
from rlvr.training import trl_seam

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rollouts:
    """One generation batch of episodes, in the shapes TRL's tool loop hands back."""

    first_turns: list[list[int]]  # what TRL's first ``generate`` call would have returned
    completion_ids: list[list[int]]
    tool_mask: list[list[int]]
    messages: list[list[dict[str, Any]]]
    tool_calls: int
    tool_failures: int


def unsupported(trainer: Any) -> str | None:
    """Why this trainer's rollouts must take TRL's own loop (None: they can run as episodes)."""
    if trainer.environment_factories is None or not trainer.tools:
        return "no tools"
    if any(trl_seam.async_tools(trainer)):
        return "async tools"
    return sampler_unsupported(trainer)


def run_rollouts(trainer: Any, prompt_ids: Sequence[list[int]]) -> Rollouts:
    """Every prompt of the batch as one episode, with TRL's settings and tool rules, in TRL's
    generation context (unwrapped model, no gradient checkpointing, full FSDP parameters)."""
    with generation_context(trainer) as model:
        turns = _TrlTurns(trainer, model, prompt_ids)
        sampling = TurnSampling(
            budget=trainer.max_completion_length,
            eos_token_ids=tuple(trainer.eos_token_ids),
            pad_token_id=trl_seam.tokenizer(trainer).pad_token_id,
            temperature=trainer.temperature,
            top_p=trainer.top_p,
            batch_size=max(1, len(prompt_ids)),
        )
        traces = sample_episodes(model, prompt_ids, turns, sampling)
    return Rollouts(
        first_turns=turns.first,
        completion_ids=[t.completion_ids for t in traces],
        tool_mask=[t.mask for t in traces],
        messages=turns.messages,
        tool_calls=turns.calls,
        tool_failures=turns.failures,
    )


class _TrlTurns:
    """The turn handler: parse each ended turn, run its calls, answer with TRL's suffix ids."""

    def __init__(self, trainer: Any, model: Any, prompt_ids: Sequence[list[int]]) -> None:
        from transformers.utils import get_json_schema

        self.trainer = trainer
        self.ids = [list(p) for p in prompt_ids]  # prompt + completion so far, per rollout
        self.prompt_lengths = [len(p) for p in prompt_ids]
        self.limit = model.config.max_position_embeddings
        schemas: dict[Any, list[Any]] = {}  # the parser types arguments by schema: build once
        for name in set(trl_seam.batch_environments(trainer)):
            schemas[name] = [get_json_schema(t) for t in trl_seam.environment_tools(trainer)[name]]
        self.schemas = [schemas[name] for name in trl_seam.batch_environments(trainer)]
        self.first: list[list[int]] = [[] for _ in prompt_ids]
        self.messages: list[list[dict[str, Any]]] = [[] for _ in prompt_ids]
        self.rounds = [0] * len(prompt_ids)
        self.calls = self.failures = 0

    def __call__(self, turns: list[tuple[int, list[int]]]) -> list[list[int] | None]:
        return [self._turn(i, turn) for i, turn in turns]

    def _turn(self, i: int, turn: list[int]) -> list[int] | None:
        from trl.chat_template_utils import parse_response

        trainer = self.trainer
        parsed = parse_response(trl_seam.tokenizer(trainer), turn, prefix=self.ids[i], tools=self.schemas[i])
        if not self.messages[i]:
            self.first[i] = list(turn)
        self.ids[i] += turn
        self.messages[i].append(parsed)
        calls = parsed.get("tool_calls")
        if not calls or self.rounds[i] >= trainer.max_tool_calling_iterations:
            return None
        results = [self._call(trl_seam.sync_tools(trainer)[i], call) for call in calls]
        suffix = trl_seam.tool_suffix_ids(trainer, results)
        total = len(self.ids[i]) + len(suffix)
        if total - self.prompt_lengths[i] > trainer.max_completion_length or total >= self.limit:
            return None  # TRL drops tool results that overflow; the rollout ends here
        self.ids[i] += suffix
        self.messages[i] += results
        self.rounds[i] += 1
        return suffix

    def _call(self, tools: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        """One tool message, as TRL's loop builds it (errors become the result)."""
        self.calls += 1
        if call["type"] == "function":
            name = call["function"]["name"]
            try:
                if name not in tools:
                    raise ValueError(f"Tool {name} not found.")
                result = tools[name](**call["function"]["arguments"])
            except Exception as exc:  # the model's call, not our bug: an observation
                self.failures += 1
                result = {"error": str(exc)}
        else:
            self.failures += 1
            name = call.get("name", "unknown")
            result = {"error": f"Unsupported tool call type: {call['type']}"}
        content = result if isinstance(result, list) else str(result)
        return {"role": "tool", "name": name, "content": content}
