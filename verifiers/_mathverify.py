"""Thin wrapper over math-verify: parse answers with its timeouts off, compare two parses.

math-verify's own timeouts use ``signal.alarm``, which only works on the main thread, so
they are disabled here; time is bounded by the worker pool's hard kill (``verifiers.pool.pool``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import math_verify.grader as _grader
import math_verify.parser as _parser
import sympy
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse
from math_verify import verify as _mv_verify

# We disable the timeouts on purpose (see module docstring); silence the one-time warning.
_parser.TIMEOUT_WARNING_SHOWN = True
_grader.TIMEOUT_WARNING_SHOWN = True

_CONFIG = (LatexExtractionConfig(), ExprExtractionConfig())
_PERCENT = re.compile(r"\s*(?:\\%|%|\\text\{\s*\\?%\s*\}|\\(?:text|mbox)\{\s*percent\s*\})\s*$")
_HUNDRED = sympy.Integer(100)
REL_TOL = sympy.Rational(1, 10**4)  # tighter than any rounding a model would be forgiven

Parsed = tuple[list[Any], bool]  # (math-verify parse list, answer was written as a percent)


# Notations math-verify misreads: \varnothing becomes a symbol, "\{ \}" a string, and
# 0.\overline{3} the number 0 (so it would "equal" gold 0 and miss gold 1/3).
_EMPTY_SET = re.compile(r"\\varnothing|\\O(?![A-Za-z])|\\\{\s*\\\}")
_REPEATING = re.compile(r"(-?)(\d*)\.(\d*)\\overline\{(\d+)\}")


def _repeating_as_fraction(match: re.Match) -> str:
    sign, whole, fixed, cycle = match.groups()
    head = int((whole or "0") + fixed)
    numerator = int((whole or "0") + fixed + cycle) - head
    denominator = 10 ** len(fixed) * (10 ** len(cycle) - 1)
    return f"{sign}\\frac{{{numerator}}}{{{denominator}}}"


def normalise_notation(answer: str) -> str:
    """Rewrite the notations above into forms math-verify reads as meant."""
    answer = _EMPTY_SET.sub(lambda _: "\\emptyset", answer)
    return _REPEATING.sub(_repeating_as_fraction, answer)


def _split_percent(answer: str) -> tuple[str, bool]:
    stripped = _PERCENT.sub("", answer)
    return stripped, stripped != answer


@functools.lru_cache(maxsize=4096)
def parse_answer(answer: str) -> Parsed:
    """Parse one final-answer string (LaTeX or plain) into math-verify's representation.

    The string is boxed first so LaTeX extraction takes it whole; if that yields nothing,
    the raw text is searched for an expression instead. Cached: one gold serves many samples.
    """
    body, percent = _split_percent(normalise_notation(answer.strip()))
    parsed = parse("\\boxed{" + body + "}", list(_CONFIG), parsing_timeout=None)
    if not any(_is_math(p) for p in parsed):
        parsed = parse(body, list(_CONFIG), parsing_timeout=None) or parsed
    return parsed, percent


def _is_math(value: Any) -> bool:
    return isinstance(value, (sympy.Basic, sympy.MatrixBase))


def has_math(parsed: Parsed) -> bool:
    return any(_is_math(p) for p in parsed[0])


def _scaled(parsed: list[Any], factor: sympy.Rational) -> list[Any]:
    return [p * factor for p in parsed if isinstance(p, sympy.Number)]


MAX_EXPONENT = 10_000  # 2^{10000} is already 3,011 digits; towers beyond are not answers


MAX_FACTORIAL = 1_000


# Functions whose value explodes with their argument: exp(10^10) has ~4e9 digits.
_GROWTH = (sympy.exp, sympy.sinh, sympy.cosh, sympy.gamma, sympy.factorial2, sympy.subfactorial)
# Unevaluated sums, products, integrals and limits are not final answers; evaluating one
# over an infinite range can run without end.
_UNEVALUATED = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Limit)


def _huge_power(node: Any) -> bool:
    """A numeric power, factorial or fast-growing function whose exact value is
    astronomically large, or an unevaluated sum, product, integral or limit."""
    if isinstance(node, _UNEVALUATED):
        return True
    if isinstance(node, (sympy.factorial, *_GROWTH)) and node.args and node.args[0].is_number:
        inner = sympy.preorder_traversal(node.args[0])
        if any(isinstance(n, (sympy.factorial, *_GROWTH)) and _huge_power(n) for n in inner):
            return True  # nested: in 10!!!!, (10!)! is already past anything evaluable
        size = node.args[0]
        limit = MAX_EXPONENT if isinstance(node, _GROWTH) else MAX_FACTORIAL
    elif isinstance(node, sympy.Pow) and node.base.is_number and node.exp.is_number:
        if node.base in (0, 1, -1):
            return False
        size, limit = node.exp, MAX_EXPONENT
    else:
        return False
    try:
        return bool(abs(size.evalf(15)) > limit)
    except Exception:  # evalf can fail on exotic nodes; be conservative
        return True


def oversized(parsed: Parsed) -> bool:
    """Whether an expression holds a numeric power too large to evaluate safely (``10^{10^{10}}``)."""
    return any(
        _huge_power(node)
        for value in parsed[0]
        if isinstance(value, sympy.Basic)
        for node in sympy.preorder_traversal(value)
    )


def _numbers_disagree(gold: list[Any], answer: list[Any]) -> bool:
    """math-verify rounds floats to 6 decimals, so 0.0000672 "equals" 0.0000673.

    For two plain numbers, also require a relative difference below ``REL_TOL``.
    """
    g, a = gold[0], answer[0]
    if not (isinstance(g, sympy.Number) and isinstance(a, sympy.Number)) or g == 0:
        return False
    if not (g.is_finite and a.is_finite):  # oo, -oo, zoo, nan: math-verify's verdict stands
        return False
    return bool(abs((a - g) / g) > REL_TOL)


def equivalent(gold: Parsed, answer: Parsed) -> bool:
    """True when math-verify finds the answer equal to the gold.

    Percent: ``50\\%`` equals ``50``; when exactly one side carries a percent sign the
    fraction reading is accepted too (gold ``50\\%`` and answer ``0.5``), as graders do.
    """
    gold_list, gold_pct = gold
    ans_list, ans_pct = answer
    if not gold_list or not ans_list:
        return False
    if _mv_verify(gold_list, ans_list, timeout_seconds=None):
        return not _numbers_disagree(gold_list, ans_list)
    if gold_pct and not ans_pct:
        scaled = _scaled(ans_list, _HUNDRED)
        return bool(scaled) and _mv_verify(gold_list, scaled, timeout_seconds=None)
    if ans_pct and not gold_pct:
        scaled = _scaled(gold_list, _HUNDRED)
        return bool(scaled) and _mv_verify(scaled, ans_list, timeout_seconds=None)
    return False
