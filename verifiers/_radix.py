"""Numbers written in a base other than ten (``52_9``, ``52_{9}``, ``\\text{A3}_{16}``).

math-verify reads ``52_9`` as 52 with a subscript it drops, so ``52_9``, ``52_8`` and ``52``
would all be equal. Here such a number becomes a key (base, value) that only the same
number in the same base matches; base ten is left to math-verify (it is the plain number).
"""

from __future__ import annotations

import re

_WRAPPED = r"\\(?:text|mathrm|textrm|mbox|rm)\s*\{\s*(?P<wrapped>[0-9A-Za-z]+)\s*\}"
_BASED = re.compile(
    rf"(?:{_WRAPPED}|\{{?(?P<bare>[0-9A-Za-z]*[0-9][0-9A-Za-z]*)\}}?)"
    r"\s*_\s*(?:\{\s*(?:\\text\s*\{\s*)?(?P<b1>\d{1,2})\s*\}?\s*\}|(?P<b2>\d{1,2}))"
)

RadixKey = tuple[int, int | str]  # (base, value), or (base, digits) when a digit is invalid


def radix_key(answer: str) -> RadixKey | None:
    """(base, value) of an answer that is one number with a base subscript; None otherwise.

    Bare digits need one decimal digit (``x_1`` is a variable, not a number); letters as
    digits are read from ``\\text{AB}_{12}`` or mixed forms like ``A3_{16}``. A digit the
    base does not have (``59_8``) keeps the digits as written, so it matches nothing else.
    """
    m = _BASED.fullmatch(answer.strip().strip("$").strip())
    if m is None:
        return None
    digits = (m.group("wrapped") or m.group("bare")).upper()
    base = int(m.group("b1") or m.group("b2"))
    if not 2 <= base <= 36 or base == 10:
        return None  # base ten is plain decimal: math-verify's reading of 52_{10} is right
    try:
        return base, int(digits, base)
    except ValueError:
        return base, digits.lstrip("0") or "0"


def radix_equal(gold: str, answer: str) -> bool | None:
    """Whether two answers agree when either is written in a base; None when neither is."""
    g, a = radix_key(gold), radix_key(answer)
    if g is None and a is None:
        return None
    return g == a
