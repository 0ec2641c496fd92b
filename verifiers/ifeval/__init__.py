"""Instruction following: IFEval, IFEvalG and IFBench checkers and the ``ifeval`` verifier."""

from verifiers.ifeval.instructions import (
    CHECKS,
    Instruction,
    InvalidReferenceError,
    UnsupportedInstructionError,
    evaluate_response,
    parse_reference,
    unsupported_instructions,
)
from verifiers.ifeval.metrics import Accuracy, accuracy, instruction_score, prompt_score
from verifiers.ifeval.verifier import IFEvalVerifier

__all__ = [
    "CHECKS",
    "Accuracy",
    "IFEvalVerifier",
    "Instruction",
    "InvalidReferenceError",
    "UnsupportedInstructionError",
    "accuracy",
    "evaluate_response",
    "instruction_score",
    "parse_reference",
    "prompt_score",
    "unsupported_instructions",
]
