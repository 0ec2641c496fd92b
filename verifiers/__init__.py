"""Scoring only: model output + reference -> Verdict. No torch, TRL, Hydra or W&B here.

Verifiers register themselves by explicit import below; ``get_verifier(name)`` builds one.
"""

from verifiers.api import as_text, verify
from verifiers.reasoning import ReasoningFormat, strip_think
from verifiers.registry import (
    UnknownVerifierError,
    Verifier,
    get_verifier,
    known_verifiers,
    register,
)
from verifiers.verdict import Status, Verdict

# Built-in verifiers: one import line per module, each module calls register() at import.
from verifiers import math_answer  # noqa: E402,F401  isort: skip
from verifiers import science  # noqa: E402,F401  isort: skip
from verifiers import exact_match  # noqa: E402,F401  isort: skip
from verifiers import ifeval  # noqa: E402,F401  isort: skip
from verifiers import tool_calls  # noqa: E402,F401  isort: skip
from verifiers.code import verifier as _code  # noqa: E402,F401  isort: skip
from verifiers.judge import verifier as _judge  # noqa: E402,F401  isort: skip

__all__ = [
    "ReasoningFormat",
    "Status",
    "UnknownVerifierError",
    "Verdict",
    "Verifier",
    "as_text",
    "get_verifier",
    "known_verifiers",
    "register",
    "strip_think",
    "verify",
]
