"""Judge backends: the Protocol a judge model is reached through, its two errors, the name registry.

A backend turns chat messages into the judge's reply text. ``openai`` (any OpenAI-compatible
chat endpoint: ``vllm serve``, ``trl vllm-serve``) lives in ``verifiers.judge.http``; ``hf`` (a
local Hugging Face model in-process) needs torch, so ``rlvr.rewards.judging`` registers it from the
rlvr side and ``verifiers`` never imports rlvr.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

Messages = Sequence[Mapping[str, str]]


class JudgeSetupError(ValueError):
    """Bad judge setup (unknown backend, missing rubric, unreachable endpoint): raised when the
    verifier is built, before any scoring; the message names the fix."""


class JudgeFailure(RuntimeError):
    """One judge call failed (timeout, transport, malformed reply): an infrastructure error,
    which the judge verifier turns into an ``error`` verdict, never a score."""


@runtime_checkable
class JudgeBackend(Protocol):
    """Where the judge model runs. ``identity`` names the model and the place it runs; it is
    part of every cache key, so two judges never share cached scores."""

    @property
    def identity(self) -> str: ...  # read-only: a property or a plain attribute satisfies it

    def complete(self, messages: Messages) -> str:
        """The judge's reply to one conversation; raises ``JudgeFailure``."""
        ...

    def complete_many(self, batch: Sequence[Messages]) -> list[str | JudgeFailure]:
        """Replies in input order; a failed item is its ``JudgeFailure``, the others still count."""
        ...


BackendFactory = Callable[..., JudgeBackend]
_BACKENDS: dict[str, BackendFactory] = {}
# Backends that exist only once another package has registered them (named in the miss message).
REGISTERED_ELSEWHERE = {"hf": "rlvr.rewards.judging (imported by rlvr's scorers)"}


def register_judge_backend(name: str, factory: BackendFactory) -> None:
    if name in _BACKENDS and _BACKENDS[name] is not factory:
        raise ValueError(f"judge backend {name!r} is already registered")
    _BACKENDS[name] = factory


def judge_backends() -> list[str]:
    return sorted(_BACKENDS)


def get_judge_backend(name: str, options: Mapping[str, Any] | None = None) -> JudgeBackend:
    """Build the backend registered under ``name`` with ``options`` (its section of the judge's
    options, ``verifier_options.judge.<name>``)."""
    if name not in _BACKENDS:
        elsewhere = {k: v for k, v in REGISTERED_ELSEWHERE.items() if k not in _BACKENDS}
        hint = "".join(f"; {k!r} is registered by {v}" for k, v in elsewhere.items())
        raise JudgeSetupError(
            f"unknown judge backend {name!r}; known: {', '.join(judge_backends()) or 'none'}"
            f"{hint}. Set verifier_options.judge.backend to one of them"
        )
    try:
        return _BACKENDS[name](**dict(options or {}))
    except TypeError as err:  # an option the backend does not take
        raise JudgeSetupError(f"judge backend {name!r}: {err}; fix verifier_options.judge.{name}") from None
