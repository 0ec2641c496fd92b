"""Math verifier (``math``): extract the final answer, compare with math-verify."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verifiers.registry import register
from verifiers.verdict import Verdict

_ANSWER_LINE = re.compile(r"Answer\s*:\s*(.+)", re.IGNORECASE)


def extract_answer(text: str) -> str | None:
    matches = _ANSWER_LINE.findall(text)
    return matches[-1].strip() if matches else None


@dataclass(frozen=True)
class MathVerifier:
    name: str = "math"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        gold = str(reference["answer"])
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.format_error("no 'Answer:' line")
        if answer == gold:
            return Verdict.correct(answer)
        return Verdict.wrong(answer, f"expected {gold}")


register("math", MathVerifier)
