"""Episode scoring: from a live environment (TRL rollouts) or from completion text (replay)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tasks.environments.registry import UnknownEnvironmentError, get_environment_class
from tasks.environments.tooling import call_tool
from verifiers.registry import register
from verifiers.tool_call_parsing import ToolCallFormatError, parse_tool_calls
from verifiers.verdict import Verdict, clip


def episode_verdict(environment: Any) -> Verdict | None:
    """Verdict for a finished episode; None for environments with nothing to score."""
    score = getattr(environment, "_verdict", None)
    return score() if callable(score) else None


def environment_rewards(environments: Sequence[Any] | None) -> list[float | None]:
    """Per-rollout rewards from TRL's ``environments=`` reward kwarg (None: not an agent row)."""
    verdicts = [episode_verdict(env) for env in environments or []]
    return [None if v is None else v.score for v in verdicts]


def replay(completion: Any, reference: Mapping[str, Any]) -> Any:
    """A fresh environment with the reference's task, after the completion's tool calls ran.

    Raises ``ToolCallFormatError`` for malformed calls, ``UnknownEnvironmentError`` for a
    reference naming no registered environment."""
    environment = get_environment_class(str(reference.get("environment")))()
    environment.reset(reference=json.dumps(dict(reference)))
    for call in parse_tool_calls(completion):
        call_tool(environment, call.name, call.arguments)
    return environment


@dataclass(frozen=True)
class EnvironmentReplayVerifier:
    """Text-only scoring of environment rows: replay the completion's calls on a fresh
    environment and apply the episode rule. Without TRL's tool loop the model sees no
    observations, so lookups it needs must already be known to it."""

    name: str = "workplace"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        try:
            environment = replay(completion, reference)
        except ToolCallFormatError as exc:
            return Verdict.format_error(clip(str(exc)))
        except UnknownEnvironmentError as exc:
            return Verdict.error(str(exc))
        verdict = episode_verdict(environment)
        return verdict if verdict is not None else Verdict.error("reference holds no environment task")


register("workplace", EnvironmentReplayVerifier)
