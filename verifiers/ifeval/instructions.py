"""Instruction table: ids -> checkers, reference parsing, per-response evaluation.

The table holds IFEval's 25 ids and those IFEvalG and IFBench add (``suites``). A
reference that cannot be scored (unknown id, missing or wrong-typed argument, negative
count, blank phrase) raises ``InvalidReferenceError``; the verifier turns it into an error
verdict, never a score. Agreement with the reference implementations' own test suites is
checked case by case in ``tests/verifiers/test_ifeval_upstream.py``. Deliberate differences
from Google's checker classes:

- Four classes its tests cover are not among the benchmark's 25 instruction ids
  (``multi-turn:constrained_start``, ``detectable_format:rephrasing``,
  ``keywords:key_sentences``, ``detectable_content:rephrase_paragraph``): no benchmark
  row uses them, so they are unsupported here rather than guessed at.
- Google replaces a negative or missing count with a random one (its instruction
  generator's path); a scored reference must state its counts, so here it is an error.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from verifiers.ifeval.loose import response_variants
from verifiers.ifeval.suites import CHECKS


class InvalidReferenceError(ValueError):
    """The reference cannot be scored (malformed, missing or bad instruction arguments)."""


class UnsupportedInstructionError(InvalidReferenceError):
    """The reference names an instruction id this package does not implement."""


@dataclass(frozen=True)
class Instruction:
    """One instruction id bound to its validated arguments."""

    instruction_id: str
    arguments: tuple[tuple[str, Any], ...] = ()

    def check(self, response: str) -> bool:
        return CHECKS[self.instruction_id](response, **dict(self.arguments))


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _convert(instruction_id: str, name: str, value: Any, annotation: str) -> Any:
    """One argument in canonical form: counts >= 0, strings without padding, never empty.

    Every integer argument is a count or a position, so a negative one is a malformed
    reference. Padding is dropped because references are typed by people (" foo " means
    "foo"), as Google's checkers strip their phrase arguments; a ``Verbatim`` string (a
    text to copy, index into or overlap with) is kept as written. A ``WordOrFirst``
    argument may be a list, whose first item is the word, as IFEvalG reads it.
    """
    annotation = annotation.removesuffix(" | None")
    if annotation == "WordOrFirst" and isinstance(value, list | tuple) and value:
        value, annotation = value[0], "str"
    if annotation == "WordOrFirst":
        annotation = "str"
    if annotation == "Verbatim" and isinstance(value, str) and value.strip():
        return value
    if annotation == "int" and (count := _count(value)) is not None:
        if count < 0:
            raise InvalidReferenceError(f"{instruction_id}: {name}={count} must not be negative")
        return count
    if annotation == "str" and isinstance(value, str) and value.strip():
        return value.strip()
    if annotation == "Sequence[str]" and isinstance(value, list | tuple):
        if all(isinstance(item, str) and item.strip() for item in value):
            return tuple(item.strip() for item in value)
    raise InvalidReferenceError(f"{instruction_id}: argument {name}={value!r} is not {annotation}")


def bind(instruction_id: str, kwargs: Mapping[str, Any] | None) -> Instruction:
    """Validate one instruction's arguments; ``None`` values are dropped, as IFEval does.

    Arguments with a default in the checker's signature may be left out.
    """
    check = CHECKS.get(instruction_id)
    if check is None:
        raise UnsupportedInstructionError(f"unsupported instruction id {instruction_id!r}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise InvalidReferenceError(f"{instruction_id}: kwargs must be an object, got {kwargs!r}")
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    params = {p.name: p for p in inspect.signature(check).parameters.values() if p.kind is p.KEYWORD_ONLY}
    if unknown := sorted(set(given) - set(params)):
        raise InvalidReferenceError(f"{instruction_id}: unexpected arguments {unknown}")
    required = {name for name, p in params.items() if p.default is p.empty}
    if missing := sorted(required - set(given)):
        raise InvalidReferenceError(f"{instruction_id}: missing arguments {missing}")
    arguments = tuple(
        (name, _convert(instruction_id, name, given[name], str(params[name].annotation)))
        for name in params
        if name in given
    )
    instruction = Instruction(instruction_id, arguments)
    try:
        instruction.check("")  # a dry run surfaces bad values (unknown relation...) now
    except ValueError as exc:
        raise InvalidReferenceError(f"{instruction_id}: {exc}") from None
    return instruction


def _as_mapping(reference: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except ValueError as exc:
            raise InvalidReferenceError(f"reference is not JSON: {exc}") from None
    if not isinstance(reference, Mapping):
        raise InvalidReferenceError(f"reference must be an object, got {type(reference).__name__}")
    return reference


def instruction_ids(reference: Mapping[str, Any] | str) -> list[str]:
    ids = _as_mapping(reference).get("instruction_id_list")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidReferenceError("reference needs instruction_id_list: a list of strings")
    return ids


def parse_reference(reference: Mapping[str, Any] | str) -> tuple[Instruction, ...]:
    """Bind every instruction of an IFEval reference (``instruction_id_list`` + ``kwargs``)."""
    ids = instruction_ids(reference)
    if unsupported := [i for i in ids if i not in CHECKS]:
        raise UnsupportedInstructionError(f"unsupported instruction id {', '.join(unsupported)}")
    kwargs = _as_mapping(reference).get("kwargs") or [{}] * len(ids)
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise InvalidReferenceError("kwargs must be a list with one entry per instruction id")
    return tuple(bind(i, k) for i, k in zip(ids, kwargs, strict=True))


def follows(instruction: Instruction, response: str, loose: bool = False) -> bool:
    """Strict: the response itself follows. Loose: any of IFEval's variants follows."""
    texts = dict.fromkeys(response_variants(response)) if loose else [response]
    return any(text.strip() and instruction.check(text) for text in texts)


def evaluate_response(response: str, reference: Mapping[str, Any] | str, loose: bool = False) -> list[bool]:
    """Per-instruction results for one response, in the reference's order."""
    return [follows(i, response, loose) for i in parse_reference(reference)]


def unsupported_instructions(references: Iterable[Mapping[str, Any] | str]) -> Counter[str]:
    """Count, per instruction id, how often references name ids we cannot check."""
    counts: Counter[str] = Counter()
    for reference in references:
        counts.update(i for i in instruction_ids(reference) if i not in CHECKS)
    return counts
