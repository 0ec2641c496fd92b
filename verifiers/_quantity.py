"""Parse a physical quantity ("9.8 m/s^2", "1.2\\times10^{-3} kg", "3e8") into value and unit.

Units are compared as normalised strings; the one conversion understood is an SI prefix on
the leading unit symbol (``km`` vs ``m``, ``cm^2`` vs ``m^2``), which covers the common
"same unit, different scale" answers without a unit algebra.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_QUANTITY_CHARS = 300  # a quantity is short; longer text is not parsed
_MINUS = "\u2212\u2013"  # unicode minus, en dash
_NUMBER = re.compile(
    r"(?P<mant>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|[-+]?\.\d+)"
    r"(?:\s*(?:[eE]\s*(?P<e1>[-+]?\d{1,4})"
    r"|(?:\\times|\\cdot|×|·|\*|x)\s*10\s*(?:\^|\*\*)\s*\{?\s*(?P<e2>[-+]?\d{1,4})\s*\}?))?"
)
_WRAPPER = re.compile(r"\\(?:text|mathrm|textrm|mbox|operatorname|rm)\s*")  # keep contents
_SUBS = (
    ("\\mu", "u"),
    ("µ", "u"),
    ("μ", "u"),
    ("\\Omega", "ohm"),
    ("Ω", "ohm"),
    ("^\\circ", "deg"),
    ("^{\\circ}", "deg"),
    ("°", "deg"),
    ("\\%", "%"),
    ("²", "^2"),
    ("³", "^3"),
    ("**", "^"),
    ("\\cdot", "*"),
    ("·", "*"),
    ("\\times", "*"),
)
_DROP = re.compile(r"[{}$()\[\]]")
_TOKEN = re.compile(r"^([A-Za-z%]+)(?:\^(-?\d+))?$")
UNIT_WORDS = frozenset(
    "mol mmol kmol cal kcal min rad deg ohm atm bar torr amu day days hr hrs yr sec lbs mph".split()
)
SI_PREFIXES = {
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "h": 1e2,
    "c": 1e-2,
    "m": 1e-3,
    "u": 1e-6,
    "n": 1e-9,
    "p": 1e-12,
}


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # normalised; "" when none was written


def normalise_unit(unit: str) -> str:
    """Canonical text of a unit: ``\\text{m}\\,s^{-2}`` -> ``m*s^-2``."""
    s = _WRAPPER.sub("", unit)
    for old, new in _SUBS:
        s = s.replace(old, new)
    s = re.sub(r"\\[,;: ]|\\quad|~", " ", s)
    s = _DROP.sub("", s).strip(" .,;")
    s = re.sub(r"\s*([*/^])\s*", r"\1", s)
    return re.sub(r"\s+", "*", s)


def unit_signature(unit: str) -> dict[str, int] | None:
    """Symbol -> exponent (``m/s^2`` and ``m*s^-2`` agree); None when not plain symbols.

    Everything after ``/`` is in the denominator (``J/mol*K`` is J mol^-1 K^-1).
    """
    signature: dict[str, int] = {}
    sign = 1
    for token in re.split(r"([*/])", unit):
        if token in ("*", ""):
            continue
        if token == "/":
            sign = -1
            continue
        m = _TOKEN.match(token)
        if m is None:
            return None
        signature[m.group(1)] = signature.get(m.group(1), 0) + sign * int(m.group(2) or 1)
    return {k: v for k, v in signature.items() if v}


def parse_quantity(text: str) -> Quantity | None:
    """The first number in ``text`` (with optional exponent) and the unit written after it."""
    if len(text) > MAX_QUANTITY_CHARS:
        return None
    s = _WRAPPER.sub("", text)
    for ch in _MINUS:
        s = s.replace(ch, "-")
    s = s.replace("{,}", ",").replace("\\!", "")
    s = re.sub(r"\\[,;: ]|\\quad|~", " ", s)  # LaTeX spacing before units
    s = s.replace("{", " ").replace("}", " ")
    m = _NUMBER.search(s)
    if m is None:
        return None
    exponent = m.group("e1") or m.group("e2") or "0"
    try:
        value = float(m.group("mant").replace(",", "")) * 10.0 ** int(exponent)
    except (OverflowError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    return Quantity(value, normalise_unit(_unit_text(s[m.end() :])))


def _unit_text(rest: str) -> str:
    """The unit part after a number: up to a bracket, comma, sentence end or a plain word."""
    rest = re.split(r"[(\[,;\n]|\.\s", rest, maxsplit=1)[0]
    words = []
    for word in rest.split()[:4]:
        if re.fullmatch(r"[a-z]{3,}", word) and word not in UNIT_WORDS:
            break  # prose ("here", "which") ends the unit
        words.append(word)
    return " ".join(words)


def last_number_text(text: str) -> str:
    """Text from the last number in the tail of ``text`` (the opt-in last-number fallback)."""
    tail = text[-5_000:]
    starts = [
        m.start()
        for m in _NUMBER.finditer(tail)
        if not (m.start() and re.match(r"[\^_{A-Za-z]", tail[m.start() - 1]))  # not s^2, x_1
    ]
    return tail[starts[-1] : starts[-1] + 100] if starts else ""


def _to_base(sig: dict[str, int], other: dict[str, int]) -> tuple[dict[str, int], float]:
    """Unprefix symbols whose unprefixed form appears in ``other`` (``cm`` when ``m`` does)."""
    base: dict[str, int] = {}
    factor = 1.0
    for sym, exp in sig.items():
        if sym not in other and sym[:1] in SI_PREFIXES and sym[1:] in other:
            factor *= SI_PREFIXES[sym[0]] ** exp
            sym = sym[1:]
        base[sym] = base.get(sym, 0) + exp
    return base, factor


def prefix_factor(unit: str, reference_unit: str) -> float | None:
    """Factor turning a value in ``unit`` into ``reference_unit``; None if the units differ."""
    if unit == reference_unit:
        return 1.0
    sig, ref = unit_signature(unit), unit_signature(reference_unit)
    if sig is None or ref is None:
        return None
    sig_base, sig_factor = _to_base(sig, ref)
    ref_base, ref_factor = _to_base(ref, sig)
    return sig_factor / ref_factor if sig_base == ref_base else None
