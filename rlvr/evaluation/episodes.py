"""Multi-turn tool episodes for evaluation: the model's turns, the tools' answers, the live verdict.

Held-out and benchmark rows that name an environment are scored the way GRPO rollouts are:
TRL's tool loop, replayed with batched KV-cached sampling (``rlvr.evaluation.multiturn``:
all live episodes decode together, each keeps its cache across turns, tool results are fed
on top of it instead of re-encoding the conversation). Each episode renders its prompt with
the environment's tools through the chat template, parses every turn with TRL's
``parse_response``, runs the calls on a live environment, appends the results as tool turns
(token ids concatenated, never re-rendered) and scores the environment's final episode. Turns
share one token budget (GRPO's ``max_completion_length``); a tool result that would overflow
it ends the episode, as in TRL.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.data.agent import live_verdict, prepare_tokenizer, rollout_text, training_row
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.multiturn import TurnSampling, sample_episodes
from rlvr.models.chat_format import ChatFormat, pad_token_id, stop_token_ids
from tasks.environments import call_tool, get_environment_class, tool_names
from verifiers import Verdict

log = logging.getLogger(__name__)

MAX_TOOL_TURNS = 8  # a model that keeps calling tools stops here even within its token budget


@dataclass
class Episode:
    """One rollout in progress: its environment, rendered ids and the turns so far."""

    environment: Any
    tools: list[Any]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_turns: int = 0
    finished: bool = False

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


@dataclass(frozen=True)
class EpisodeResult:
    text: str  # the rollout as text: assistant turns with their tool calls, and tool results
    verdict: Verdict
    tokens: int  # completion tokens: the model's turns and the tool results between them


def episode_tokenizer(tokenizer: Any) -> Any:
    """The tokenizer with the response template TRL parses tool calls with."""
    tokenizer = prepare_tokenizer(tokenizer)
    if getattr(tokenizer, "response_template", None) or getattr(tokenizer, "response_schema", None):
        return tokenizer
    from trl.chat_template_utils import add_response_schema

    try:
        return add_response_schema(tokenizer)
    except ValueError as exc:
        raise ValueError(
            "tool episodes need a tokenizer whose chat template TRL can parse tool calls from "
            f"({exc}); set tokenizer.response_template, or evaluate this model on text-only tasks"
        ) from exc


@functools.cache
def tool_schemas(environment_class: type) -> tuple[dict[str, Any], ...]:
    """The JSON schemas of an environment's tools, as the chat template renders them and the
    parser types arguments with (built once: converting them is most of a parse's cost)."""
    from transformers.utils import get_json_schema

    probe = environment_class()
    return tuple(get_json_schema(getattr(probe, name)) for name in tool_names(environment_class))


def start_episode(
    tokenizer: Any,
    row: dict[str, Any],
    rendered: dict[Any, list[int]] | None = None,
    chat: ChatFormat | None = None,
) -> Episode:
    """A fresh environment reset from the row (as TRL resets it) and the rendered prompt;
    ``rendered`` keeps the prompts already rendered for this row, by observation."""
    environment = get_environment_class(row["environment"])()
    observation = environment.reset(**{k: v for k, v in row.items() if k != "environment"})
    tools = list(tool_schemas(type(environment)))
    key = observation if isinstance(observation, str) else None
    if rendered is not None and key in rendered:
        return Episode(environment, tools, list(rendered[key]))
    prompt = [dict(m) for m in training_row(row)["prompt"]]
    if key is not None:
        prompt[-1] = {**prompt[-1], "content": prompt[-1]["content"] + key}
    prompt_ids = (chat or ChatFormat()).ids(tokenizer, prompt, tools=tools)
    if rendered is not None:
        rendered[key] = list(prompt_ids)
    return Episode(environment, tools, list(prompt_ids))


def tool_suffix_ids(tokenizer: Any, tool_messages: list[dict[str, Any]], chat: ChatFormat | None = None) -> list[int]:
    """Token ids that follow an assistant tool-call turn: the tool results, then the next
    assistant header (TRL's construction: a dummy conversation with and without them)."""
    chat = chat or ChatFormat()
    call = {"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}
    dummy = [
        {"role": "user", "content": "dummy"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    prefix = chat.conversation_ids(tokenizer, dummy)
    full = chat.conversation_ids(tokenizer, dummy + tool_messages, add_generation_prompt=True)
    eos = [i for i, t in enumerate(prefix) if t == tokenizer.eos_token_id]
    prefix = prefix[: eos[-1] + 1] if eos else prefix
    if list(full[: len(prefix)]) != list(prefix):
        raise ValueError("chat template does not render tool results as a suffix of the turn")
    return list(full[len(prefix) :])


def run_tools(episode: Episode, calls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool messages for one turn's calls; a failing call answers with its error, as in TRL."""
    messages = []
    for call in calls:
        function = call.get("function") or {}
        name = function.get("name", "unknown")
        try:
            result: Any = call_tool(episode.environment, name, function.get("arguments"))
        except Exception as exc:  # the model's arguments, not our bug: an observation
            result = {"error": str(exc)}
        messages.append({"role": "tool", "name": name, "content": str(result)})
    return messages


def _advance(
    tokenizer: Any,
    episode: Episode,
    turn: list[int],
    budget: int,
    limit: int,
    chat: ChatFormat | None = None,
) -> list[int] | None:
    """Record one generated turn; run its tool calls and append their results when they fit.
    The ids appended after the turn (None when the episode ends with it)."""
    from trl.chat_template_utils import parse_response

    parsed = parse_response(tokenizer, turn, prefix=episode.ids, tools=episode.tools)
    episode.completion_ids += turn
    episode.messages.append(parsed)
    calls = parsed.get("tool_calls")
    if not calls or episode.tool_turns >= MAX_TOOL_TURNS:
        episode.finished = True
        return None
    results = run_tools(episode, calls)
    suffix = tool_suffix_ids(tokenizer, results, chat or ChatFormat())
    if len(episode.completion_ids) + len(suffix) > budget or len(episode.ids) + len(suffix) >= limit:
        episode.finished = True  # TRL drops tool results that overflow the budget
        return None
    episode.completion_ids += suffix
    episode.messages += results
    episode.tool_turns += 1
    return suffix


def run_episodes(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    decoding: Decoding,
    *,
    batch_size: int = 64,
    seed: int = 0,
    format_gate: bool = False,
    chat: ChatFormat | None = None,
    share_prompts: bool = True,
) -> list[list[EpisodeResult]]:
    """``decoding.k`` sampled episodes per row (one when greedy), each scored on its live
    environment; ``decoding.max_new_tokens`` is the token budget of a whole episode.
    ``share_prompts=False``: each episode's row holds its own copy of its prompt's cache."""
    import torch

    tokenizer = episode_tokenizer(tokenizer)
    chat = chat or ChatFormat()
    per_row = 1 if decoding.greedy else decoding.k
    episodes = []
    for row in rows:
        rendered: dict[Any, list[int]] = {}  # the row's samples share one rendering
        episodes += [start_episode(tokenizer, dict(row), rendered, chat) for _ in range(per_row)]
    limit = getattr(model.config, "max_position_embeddings", 1 << 30)
    budget = decoding.max_new_tokens

    def on_turns(turns: list[tuple[int, list[int]]]) -> list[list[int] | None]:
        return [_advance(tokenizer, episodes[i], turn, budget, limit, chat) for i, turn in turns]

    sampling = TurnSampling(
        budget=budget,
        eos_token_ids=(stops := stop_token_ids(tokenizer, model.generation_config)),
        pad_token_id=pad_token_id(tokenizer, stops),
        temperature=decoding.temperature,
        top_p=decoding.top_p,
        greedy=decoding.greedy,
        batch_size=batch_size,
        share_prompts=share_prompts,
    )
    generator = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    was_training = model.training
    model.eval()
    try:
        sample_episodes(model, [e.prompt_ids for e in episodes], on_turns, sampling, generator)
    finally:
        model.train(was_training)
    return score_episodes(episodes, per_row, format_gate)


def score_episodes(episodes: Sequence[Episode], per_row: int, format_gate: bool) -> list[list[EpisodeResult]]:
    """Each finished episode scored on its live environment, grouped ``per_row`` per row."""
    results = []
    for e in episodes:
        text = rollout_text(e.messages)
        verdict = live_verdict(e.environment, text, format_gate)
        verdict = verdict or Verdict.error("the row's task has no episode rule")
        results.append(EpisodeResult(text, verdict, len(e.completion_ids)))
    return [results[i : i + per_row] for i in range(0, len(results), per_row)]
