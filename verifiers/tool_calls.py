"""Tool-call verifier (``tool_calls``): BFCL-style AST checking of calls against allowed values.

Semantics follow the public BFCL AST checker: the function name must match, required
parameters must be present, unknown parameters are rejected, values are type-checked against
the function's JSON-schema types (BFCL's ``dict``/``float``/``tuple``/``any`` included) and must
be one of the allowed values (``""`` among them marks the parameter optional). Strings compare
case-insensitively without spaces and ``,./-_*^``. Parallel calls match in any order
(maximum bipartite matching); an empty ground truth means no call is the right answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers.registry import register
from verifiers.tool_call_parsing import ToolCall, ToolCallFormatError, parse_tool_calls
from verifiers.verdict import Verdict, clip

MODES = ("exact", "partial")
_STRIP_CHARS = re.compile(r"[ ,./\-_*^]")
_NUMBER_TYPES = ("float", "number")


def standardize(text: str) -> str:
    """BFCL's string normal form: no spaces or ``,./-_*^``, lower case, single quotes as double."""
    return _STRIP_CHARS.sub("", text).lower().replace("'", '"')


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def type_matches(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``value`` has the JSON-schema (BFCL dialect) type of ``schema``, items included."""
    kind = schema.get("type", "any")
    if kind in _NUMBER_TYPES:
        return _is_number(value)  # BFCL: Python accepts an int where a float is expected
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("dict", "object"):
        return isinstance(value, dict)
    if kind in ("array", "tuple"):
        if not isinstance(value, list):
            return False
        items = schema.get("items")
        return not isinstance(items, Mapping) or all(type_matches(v, items) for v in value)
    return True  # "any" or a type name we do not know: BFCL does not check it


def value_matches(value: Any, gold: Any) -> bool:
    """Whether ``value`` equals one gold entry (a dict gold is a template of allowed lists)."""
    if isinstance(gold, dict):
        return isinstance(value, dict) and _dict_matches(value, gold)
    if isinstance(gold, list):
        return (
            isinstance(value, list)
            and len(value) == len(gold)
            and all(value_matches(v, g) for v, g in zip(value, gold, strict=True))
        )
    if isinstance(gold, str):
        return isinstance(value, str) and standardize(value) == standardize(gold)
    if isinstance(gold, bool):
        return isinstance(value, bool) and value == gold
    if _is_number(gold):
        return _is_number(value) and float(value) == float(gold)
    return value == gold


def allowed(value: Any, options: Any) -> bool:
    """Whether ``value`` matches any entry of an allowed-values list."""
    options = options if isinstance(options, list) else [options]
    return any(value_matches(value, option) for option in options)


def _dict_matches(value: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    for key, item in value.items():
        if key not in template or not allowed(item, template[key]):
            return False
    missing = [k for k in template if k not in value]
    return all("" in _as_list(template[k]) for k in missing)


def _as_list(options: Any) -> list[Any]:
    return options if isinstance(options, list) else [options]


def _same_name(a: str, b: str) -> bool:
    # some models cannot emit dots in names; BFCL accepts "math_factorial" for "math.factorial"
    return a == b or a.replace(".", "_") == b.replace(".", "_")


def check_call(call: ToolCall, doc: Mapping[str, Any], gold: Mapping[str, Any]) -> str | None:
    """Why ``call`` does not match one gold call (param -> allowed values), or None if it does."""
    params = doc.get("parameters") or {}
    properties = params.get("properties") or {}
    for name in params.get("required") or []:
        if name not in call.arguments:
            return f"{call.name}: missing required parameter {name!r}"
    for name, value in call.arguments.items():
        if name not in properties or name not in gold:
            return f"{call.name}: unexpected parameter {name!r}"
        schema = properties[name]
        options = _as_list(gold[name])
        # the gold list is the authority: a value it literally contains passes the type check
        # (BFCL's string-as-variable rule, and a few items whose schema disagrees with the gold)
        literal = any(type(o) is type(value) and o == value for o in options)
        if not type_matches(value, schema) and not literal:
            return f"{call.name}: {name!r} should be {schema.get('type')}, got {type(value).__name__}"
        if not allowed(value, options):
            return clip(f"{call.name}: {name!r}={value!r} not among allowed {options!r}", 200)
    for name, options in gold.items():
        if name not in call.arguments and "" not in _as_list(options):
            return f"{call.name}: missing parameter {name!r}"
    return None


def resolve_name(gold_name: str, docs: Mapping[str, Any]) -> str | None:
    """The documented function a gold call names. A few BFCL golds drop the namespace
    (``find_closest`` for ``restaurant_search.find_closest``); a unique suffix match resolves them."""
    if gold_name in docs:
        return gold_name
    found = [n for n in docs if n.endswith("." + gold_name) or _same_name(n, gold_name)]
    return found[0] if len(found) == 1 else None


def _pair_error(call: ToolCall, gold: Mapping[str, Any], docs: Mapping[str, Mapping[str, Any]]) -> str | None:
    ((gold_name, gold_params),) = gold.items()
    doc_name = resolve_name(gold_name, docs) or gold_name
    if not (_same_name(call.name, doc_name) or _same_name(call.name, gold_name)):
        return f"called {call.name!r}, expected {doc_name!r}"
    return check_call(call, docs[doc_name], gold_params)


def _max_matching(ok: list[list[bool]]) -> int:
    """Size of a maximum bipartite matching; ``ok[g][p]``: prediction p satisfies gold g."""
    owner: dict[int, int] = {}

    def augment(g: int, seen: set[int]) -> bool:
        for p, fits in enumerate(ok[g]):
            if fits and p not in seen:
                seen.add(p)
                if p not in owner or augment(owner[p], seen):
                    owner[p] = g
                    return True
        return False

    return sum(augment(g, set()) for g in range(len(ok)))


def _closest_error(
    errors: list[list[str | None]],
    calls: Sequence[ToolCall],
    golds: Sequence[Mapping[str, Any]],
    parallel: bool,
) -> str | None:
    """The most telling mismatch: against a call of the same function when there is one."""
    for g, row in enumerate(errors):
        if not parallel:
            if g < len(row) and row[g] is not None:
                return row[g]
            continue
        if any(e is None for e in row):
            continue
        (name,) = golds[g]
        fits_other = {p for p in range(len(calls)) if any(r[p] is None for r in errors)}
        same = [p for p, c in enumerate(calls) if _same_name(c.name, name)]
        free = [p for p in same if p not in fits_other]
        return row[(free or same or [0])[0]]
    return None


@dataclass(frozen=True)
class ToolCallsVerifier:
    """``exact``: 1 only if every gold call is matched and nothing else is called.
    ``partial``: matched gold calls / max(#gold, #predicted), so extra calls cost credit."""

    name: str = "tool_calls"
    mode: str = "exact"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"tool_calls mode {self.mode!r}; valid modes: {', '.join(MODES)}")

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        try:
            docs = {f["name"]: f for f in reference["functions"]}
            golds = list(reference["ground_truth"])
            if any(not isinstance(g, Mapping) or len(g) != 1 or not resolve_name(next(iter(g)), docs) for g in golds):
                return Verdict.error("reference ground_truth names a function missing from functions")
        except (KeyError, TypeError) as exc:
            return Verdict.error(clip(f"unscorable tool_calls reference: {exc!r}"))
        try:
            calls = parse_tool_calls(completion)
        except ToolCallFormatError as exc:
            return Verdict.format_error(clip(str(exc)))
        extracted = clip(json.dumps([c.to_dict() for c in calls], default=str))
        if not golds:
            if calls:
                return Verdict.wrong(extracted, "no call is right here (irrelevance); got calls")
            return Verdict.correct(extracted, "correctly made no call")
        if not calls:
            return Verdict.wrong(extracted, f"no tool call; expected {len(golds)}")
        return self._score(calls, golds, docs, bool(reference.get("parallel")), extracted)

    def _score(
        self,
        calls: Sequence[ToolCall],
        golds: Sequence[Mapping[str, Any]],
        docs: Mapping[str, Mapping[str, Any]],
        parallel: bool,
        extracted: str,
    ) -> Verdict:
        errors = [[_pair_error(c, g, docs) for c in calls] for g in golds]
        if parallel:
            matched = _max_matching([[e is None for e in row] for row in errors])
        else:
            matched = sum(errors[i][i] is None for i in range(min(len(calls), len(golds))))
        total = max(len(golds), len(calls))
        if matched == total:
            return Verdict.correct(extracted)
        detail = f"matched {matched}/{len(golds)} gold calls with {len(calls)} calls"
        hint = _closest_error(errors, calls, golds, parallel)
        if hint:
            detail += f"; e.g. {hint}"
        score = matched / total if self.mode == "partial" else 0.0
        return Verdict.wrong(extracted, clip(detail), score=score)


register("tool_calls", ToolCallsVerifier)
