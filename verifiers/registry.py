"""Name -> verifier factory registry, filled by explicit imports in ``verifiers/__init__``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from verifiers.verdict import Verdict


@runtime_checkable
class Verifier(Protocol):
    """Scores one model completion against one reference. Must be picklable (worker pools)."""

    @property
    def name(self) -> str: ...  # read-only, so frozen dataclasses satisfy it

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict: ...


VerifierFactory = Callable[..., Verifier]

_REGISTRY: dict[str, VerifierFactory] = {}


class UnknownVerifierError(KeyError):
    """Raised for a verifier name nobody registered; the message lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


def register(name: str, factory: VerifierFactory) -> None:
    if name in _REGISTRY and _REGISTRY[name] is not factory:
        raise ValueError(f"verifier {name!r} is already registered")
    _REGISTRY[name] = factory


def known_verifiers() -> list[str]:
    return sorted(_REGISTRY)


def get_verifier(name: str, **options: Any) -> Verifier:
    """Build the verifier registered under ``name`` with keyword options."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UnknownVerifierError(
            f"unknown verifier {name!r}; known verifiers: {', '.join(known_verifiers())}"
        ) from None
    return factory(**options)
