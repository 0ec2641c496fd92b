"""The verdict every verifier returns: a score, a status and a short explanation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    """Outcome classes of one verification (DESIGN.md §4).

    ``ERROR`` is reserved for failures of the verifier or its infrastructure (a bug, a dead
    worker, an unscorable reference); it is counted and can abort a run. Bad model output is
    never ``ERROR``: it is ``WRONG``, ``FORMAT_ERROR`` or ``TIMEOUT``.
    """

    CORRECT = "correct"
    WRONG = "wrong"
    FORMAT_ERROR = "format_error"
    TIMEOUT = "timeout"
    ERROR = "error"


@dataclass(frozen=True)
class Verdict:
    """Result of scoring one completion against one reference."""

    score: float
    status: Status
    extracted: str | None = None
    details: str = ""

    @property
    def is_correct(self) -> bool:
        return self.status is Status.CORRECT

    @property
    def is_infra_error(self) -> bool:
        return self.status is Status.ERROR

    def to_dict(self) -> dict[str, object]:
        return {
            "score": self.score,
            "status": self.status.value,
            "extracted": self.extracted,
            "details": self.details,
        }

    @classmethod
    def correct(cls, extracted: str | None = None, details: str = "", score: float = 1.0) -> Verdict:
        return cls(score, Status.CORRECT, extracted, details)

    @classmethod
    def wrong(cls, extracted: str | None = None, details: str = "", score: float = 0.0) -> Verdict:
        return cls(score, Status.WRONG, extracted, details)

    @classmethod
    def format_error(cls, details: str, extracted: str | None = None) -> Verdict:
        return cls(0.0, Status.FORMAT_ERROR, extracted, details)

    @classmethod
    def timeout(cls, details: str = "time limit exceeded") -> Verdict:
        return cls(0.0, Status.TIMEOUT, None, details)

    @classmethod
    def error(cls, details: str) -> Verdict:
        return cls(0.0, Status.ERROR, None, details)


MAX_DETAILS_CHARS = 500


def clip(text: str, limit: int = MAX_DETAILS_CHARS) -> str:
    """Shorten text for verdict details so a huge output never bloats logs."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
