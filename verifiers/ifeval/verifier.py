"""The ``ifeval`` verifier: IFEval instructions -> Verdict, strict or loose, all or fraction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verifiers.ifeval.instructions import InvalidReferenceError, follows, parse_reference
from verifiers.ifeval.metrics import SUMMARY, instruction_score, prompt_score
from verifiers.registry import register
from verifiers.verdict import Verdict, clip


@dataclass(frozen=True)
class IFEvalVerifier:
    """Scores a response against every instruction of an IFEval reference.

    mode: ``strict`` checks the response as written; ``loose`` also accepts IFEval's
        variants (first/last line dropped, ``*`` removed).
    reward: ``all`` gives 1.0 only when every instruction is followed (M2RL); ``fraction``
        gives the share of instructions followed (open-instruct).
    gate: instruction ids that must be followed for any credit. A training reward's guard: a
        share of constraints met by an answer that ignores the request (``content:
        addresses_prompt``) earns nothing, so partial credit cannot be won by a degenerate
        answer. Instructions a reference does not list gate nothing.
    """

    mode: Literal["strict", "loose"] = "strict"
    reward: Literal["all", "fraction"] = "all"
    gate: tuple[str, ...] = ()
    name: str = "ifeval"

    def __post_init__(self) -> None:
        if self.mode not in ("strict", "loose"):
            raise ValueError(f"ifeval mode must be 'strict' or 'loose', got {self.mode!r}")
        if self.reward not in ("all", "fraction"):
            raise ValueError(f"ifeval reward must be 'all' or 'fraction', got {self.reward!r}")
        if isinstance(self.gate, str) or not all(isinstance(g, str) for g in self.gate):
            raise ValueError(f"ifeval gate must be a list of instruction ids, got {self.gate!r}")
        object.__setattr__(self, "gate", tuple(self.gate))  # a config list arrives as a list

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        try:
            instructions = parse_reference(reference)
        except InvalidReferenceError as exc:
            return Verdict.error(clip(str(exc)))
        if not instructions:
            return Verdict.error("ifeval reference lists no instructions")
        loose = self.mode == "loose"
        results = [follows(i, completion, loose) for i in instructions]
        score = prompt_score(results) if self.reward == "all" else instruction_score(results)
        ungated = all(ok for i, ok in zip(instructions, results, strict=True) if i.instruction_id in self.gate)
        score = score if ungated else 0.0
        summary = SUMMARY.format(followed=sum(results), total=len(results))
        if all(results):
            return Verdict.correct(summary, score=score)
        failed = [i.instruction_id for i, ok in zip(instructions, results, strict=True) if not ok]
        return Verdict.wrong(summary, clip(f"not followed: {', '.join(failed)}"), score=score)


register("ifeval", IFEvalVerifier)
