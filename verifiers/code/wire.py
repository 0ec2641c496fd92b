"""Plain-data wire format between the judge and the solution process: a strict, bounded codec.

Stdlib only: it runs inside the sandbox (shipped as source ahead of ``split``) as well as
here. A value crosses as JSON: ``None``, ``bool``, ``str``, ints below 2**53 and finite floats
as themselves; everything else as a tagged list — ``["I", hex]`` big int, ``["F", "nan"]``
non-finite float, ``["c", re, im]``, ``["b", hex]`` bytes, ``["B", hex]`` bytearray,
``["l"|"t"|"s"|"f", *items]`` list/tuple/set/frozenset, ``["d", k1, v1, ...]`` dict,
``["Q", num, den]`` Fraction, ``["D", text]`` Decimal, ``["T", name]`` a built-in type.
Subclasses of those types travel as their built-in content (a rigged ``__eq__`` stays behind).
Any other object goes through the caller's ``other`` hook (a handle, or a refusal).

``decode`` is the trusted side's guard: whatever bytes arrive, it returns fresh objects of
exact built-in types (or what the caller's ``handle`` hook makes of a handle), or raises
``WireError``. Nesting is capped at ``MAX_DEPTH`` and a frame at ``MAX_FRAME`` bytes.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable
from typing import Any

Other = Callable[[Any], Any]  # encodes what is not plain data
Handle = Callable[[str, list], Any]  # decodes a ``h``/``n``/``M`` node

MAX_FRAME = 16 << 20
MAX_DEPTH = 200
_SAFE_INT = 1 << 53
_TYPES = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    list,
    tuple,
    dict,
    set,
    frozenset,
    type,
    object,
    type(None),
)
BUILTIN_TYPES: dict[str, type] = {t.__name__: t for t in _TYPES}
_SPECIAL_FLOATS = ("inf", "-inf", "nan")
_CONTAINERS = {"l": list, "t": tuple, "s": set, "f": frozenset}


class WireError(ValueError):
    """A frame or value that breaks the wire format (malformed, too big, too deep)."""


def encode(value: Any, other: Other, depth: int = 0) -> Any:
    """``value`` as JSON-able wire data; ``other(obj)`` encodes what is not plain data."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply (or cyclic)")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value if -_SAFE_INT < value < _SAFE_INT else ["I", format(value, "x")]
    if t is float:
        return value if math.isfinite(value) else ["F", repr(value)]
    if t in (list, tuple, set, frozenset):
        return [_TAGS[t], *(encode(v, other, depth + 1) for v in value)]
    if t is dict:
        return ["d", *(encode(x, other, depth + 1) for kv in value.items() for x in kv)]
    if t is type and BUILTIN_TYPES.get(value.__name__) is value:  # type: ignore[union-attr]
        return ["T", value.__name__]  # type: ignore[union-attr]
    return _encode_rest(value, other, depth)


_TAGS: dict[type, str] = {list: "l", tuple: "t", set: "s", frozenset: "f"}


def _encode_rest(value: Any, other: Other, depth: int) -> Any:
    if isinstance(value, (complex, bytes, bytearray)):
        if isinstance(value, complex):
            return ["c", encode(float(value.real), other), encode(float(value.imag), other)]
        return ["B" if isinstance(value, bytearray) else "b", bytes(value).hex()]
    for base in (int, float, str):  # bool cannot be subclassed
        if isinstance(value, base):
            return encode(base.__dict__[f"__{base.__name__}__"](value), other, depth)
    for container in (list, tuple, set, frozenset):
        if isinstance(value, container):
            items = container.__iter__(value)  # type: ignore[arg-type]  # the built-in one
            return [_TAGS[container], *(encode(v, other, depth + 1) for v in items)]
    if isinstance(value, dict):
        return ["d", *(encode(x, other, depth + 1) for kv in dict.items(value) for x in kv)]
    kind = (type(value).__module__, type(value).__name__)
    if kind == ("fractions", "Fraction"):
        return ["Q", encode(value.numerator, other), encode(value.denominator, other)]
    if kind == ("decimal", "Decimal"):
        return ["D", str(value)]
    if kind[0] == "numpy" and getattr(value, "ndim", None) == 0:
        return encode(value.item(), other, depth)  # a numpy scalar: its Python value
    return other(value)


def decode(node: Any, handle: Handle, depth: int = 0) -> Any:
    """Fresh built-in objects from wire data; ``handle(tag, rest)`` decodes ``h``/``n``/``M``."""
    try:
        return _decode(node, handle, depth)
    except WireError:
        raise
    except (TypeError, ValueError, ArithmeticError, RecursionError, IndexError) as exc:
        raise WireError(f"bad value on the wire ({type(exc).__name__})") from None


def _decode(node: Any, handle: Handle, depth: int) -> Any:
    t = type(node)
    if node is None or t in (bool, int, float, str):
        return node
    if t is not list or not node or type(node[0]) is not str:
        raise WireError("bad value on the wire")
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    tag, rest = node[0], node[1:]
    if tag in _CONTAINERS:
        return _CONTAINERS[tag](_decode(x, handle, depth + 1) for x in rest)
    if tag == "d":
        if len(rest) % 2:
            raise WireError("odd dict")
        items = [_decode(x, handle, depth + 1) for x in rest]
        return dict(zip(items[::2], items[1::2], strict=True))
    return _decode_scalar(tag, rest, handle)


def _decode_scalar(tag: str, rest: list, handle: Handle) -> Any:
    if tag == "I" and _texts(rest, 1):
        return int(rest[0], 16)
    if tag == "F" and _texts(rest, 1) and rest[0] in _SPECIAL_FLOATS:
        return float(rest[0])
    if tag == "c" and len(rest) == 2:
        parts = [_decode_scalar(r[0], r[1:], handle) if type(r) is list else r for r in rest]
        if all(type(p) in (int, float) for p in parts):
            return complex(*parts)
    if tag in ("b", "B") and _texts(rest, 1):
        return (bytes if tag == "b" else bytearray).fromhex(rest[0])
    if tag == "Q" and len(rest) == 2:
        import fractions

        num, den = (_decode_scalar(r[0], r[1:], handle) if type(r) is list else r for r in rest)
        if type(num) is int and type(den) is int and den:
            return fractions.Fraction(num, den)
    if tag == "D" and _texts(rest, 1):
        import decimal

        return decimal.Decimal(rest[0])
    if tag == "T" and _texts(rest, 1) and rest[0] in BUILTIN_TYPES:
        return BUILTIN_TYPES[rest[0]]
    if tag in ("h", "n", "M"):
        return handle(tag, rest)
    raise WireError(f"bad {tag!r} value on the wire")


def _texts(rest: list, n: int) -> bool:
    return len(rest) == n and all(type(r) is str and len(r) < MAX_FRAME for r in rest)


def write_frame(fd: int, obj: Any) -> None:
    """One length-prefixed JSON frame; ``WireError`` (nothing written) when it is too big."""
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if len(data) > MAX_FRAME:
        raise WireError(f"a frame of {len(data)} bytes exceeds {MAX_FRAME}")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


class FrameReader:
    """Reads frames from one pipe, buffered (one ``read`` usually brings a whole frame)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, bytearray()

    def read(self) -> Any:
        """The next frame's JSON value. ``EOFError``: the writer is gone; ``WireError``: bad frame."""
        (size,) = struct.unpack(">I", self._take(4))
        if size > MAX_FRAME:
            raise WireError(f"a frame of {size} bytes exceeds {MAX_FRAME}")
        try:
            return json.loads(self._take(size).decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError) as exc:
            raise WireError(f"unreadable frame ({type(exc).__name__})") from None

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = os.read(self.fd, max(n - len(self.buf), 1 << 16))
            if not chunk:
                raise EOFError("the other end closed the pipe")
            self.buf += chunk
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data
