"""The judge/solution wire codec: plain values round-trip exactly; anything else is refused."""

from __future__ import annotations

import math
import os
from collections import Counter, OrderedDict, namedtuple
from decimal import Decimal
from fractions import Fraction

import pytest

from verifiers.code.wire import MAX_DEPTH, FrameReader, WireError, decode, encode, write_frame


def refuse(obj):
    raise TypeError(f"not plain: {type(obj).__name__}")


def no_handles(tag, rest):
    raise WireError("no handles here")


def roundtrip(value):
    return decode(encode(value, refuse), no_handles)


PLAIN = [
    None,
    True,
    False,
    0,
    -7,
    2**53,
    -(2**80),
    10**5000,
    1.5,
    -0.0,
    math.inf,
    -math.inf,
    "",
    "héllo \ud800",
    b"\x00\xff",
    bytearray(b"ab"),
    1 + 2j,
    complex(math.inf, -1),
    [1, [2, (3, {4})]],
    (),
    (1,),
    {1: "a", (2, 3): [None]},
    set(),
    frozenset({1, "x"}),
    {frozenset({1}): {"k": [1.25]}},
    Fraction(1, 3),
    Decimal("1.10"),
    int,
    type(None),
]


@pytest.mark.parametrize("value", PLAIN, ids=lambda v: type(v).__name__)
def test_plain_values_round_trip_with_their_types(value):
    back = roundtrip(value)
    assert type(back) is type(value) and back == value


def test_nan_round_trips():
    assert math.isnan(roundtrip(math.nan))


@pytest.mark.parametrize(
    ("value", "plain"),
    [(Counter("aab"), {"a": 2, "b": 1}), (OrderedDict(x=1), {"x": 1}), (namedtuple("P", "x y")(1, 2), (1, 2))],
)
def test_subclasses_travel_as_their_builtin_content(value, plain):
    back = roundtrip(value)
    assert type(back) is type(plain) and back == plain


def test_a_rigged_subclass_loses_its_rigging():
    class Int(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    back = roundtrip(Int(5))
    assert type(back) is int and back != 6


def test_other_objects_go_to_the_hook():
    class Thing:
        pass

    assert encode([Thing()], lambda obj: ["h", 0, 7]) == ["l", ["h", 0, 7]]
    with pytest.raises(TypeError):
        encode(Thing(), refuse)


def test_nesting_and_cycles_are_capped():
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(WireError):
        encode(deep, refuse)
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(WireError):
        encode(cyclic, refuse)


HOSTILE_NODES = [
    {"a": 1},
    [],
    [1, 2],
    ["zz"],
    ["d", 1],
    ["I", "xyz"],
    ["I", 5],
    ["F", "1e999x"],
    ["b", "zz"],
    ["T", "Exception"],
    ["T", "__import__"],
    ["s", ["l"]],
    ["d", ["l"], 1],
    ["Q", 1, 0],
    ["c", "1", 2],
    ["D", "not a number"],
    ["h", 0, 1],
    ["M", "os"],
]


@pytest.mark.parametrize("node", HOSTILE_NODES, ids=repr)
def test_malformed_wire_values_are_refused(node):
    with pytest.raises(WireError):
        decode(node, no_handles)


def test_decode_depth_is_capped():
    node: list = ["l"]
    for _ in range(MAX_DEPTH + 5):
        node = ["l", node]
    with pytest.raises(WireError):
        decode(node, no_handles)


def test_frames_survive_split_writes_and_report_eof():
    r, w = os.pipe()
    try:
        write_frame(w, {"id": 1})
        write_frame(w, ["l", 1])
        reader = FrameReader(r)
        assert reader.read() == {"id": 1} and reader.read() == ["l", 1]
        os.write(w, b"\x00\x00\x00\x05{")
        os.close(w)
        with pytest.raises(EOFError):
            reader.read()
    finally:
        os.close(r)


def test_oversized_and_garbage_frames_are_refused():
    r, w = os.pipe()
    try:
        os.write(w, b"\xff\xff\xff\xff")
        with pytest.raises(WireError):
            FrameReader(r).read()
        os.write(w, b"\x00\x00\x00\x03]]]")
        with pytest.raises(WireError):
            FrameReader(r).read()
    finally:
        os.close(r)
        os.close(w)
