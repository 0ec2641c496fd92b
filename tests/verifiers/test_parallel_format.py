"""The fork-join parser: structure tables, lengths, and hostile inputs in bounded time."""

from __future__ import annotations

import time

import pytest

from verifiers.parallel_format import MAX_CHARS, parse_parallel

OUT = "<Outlines><Outline>1: a</Outline><Outline>2: b</Outline></Outlines>"
T = "<Thread>1: aa</Thread><Thread>2: bbbb</Thread>"
GOOD = f"<think>x<Parallel>{OUT}{T}</Parallel>join</think>\nAnswer: 3"

# (text, parallel, well_formed, error fragment)
STRUCTURE = [
    (GOOD, True, True, ""),
    ("<think>3+4=7</think>\nAnswer: 7", False, True, ""),  # sequential: well formed
    ("", False, True, ""),
    (f"<Parallel>\n {OUT}\n{T}\n</Parallel>", True, True, ""),  # whitespace between parts
    (GOOD + f"<Parallel>{OUT}{T}</Parallel>", True, True, ""),  # two blocks
    (f"<Parallel>{OUT}{T}", False, False, "unclosed"),
    (f"<Parallel>{OUT}<Thread>1: a</Thread><Thread>2: b", False, False, "unclosed"),
    ("x</Parallel>", False, False, "stray </Parallel>"),
    ("x<Thread>a</Thread>", False, False, "stray <Thread>"),
    ("<Outline>a</Outline>", False, False, "stray <Outline>"),
    (f"<Parallel>{OUT}<Thread>1: a<Parallel></Thread></Parallel>", False, False, "nested"),
    (
        f"<Parallel>{OUT}<Thread>1: a</Thread><Thread> \n</Thread></Parallel>",
        False,
        False,
        "empty thread",
    ),
    (
        f"<Parallel><Outlines><Outline> </Outline></Outlines>{T}</Parallel>",
        False,
        False,
        "empty outline",
    ),
    (f"<Parallel><Outlines></Outlines>{T}</Parallel>", False, False, "no outline"),
    (f"<Parallel>{OUT}<Thread>1: a</Thread></Parallel>", False, False, "1 thread"),
    (f"<Parallel>{OUT}{T}<Thread>3: c</Thread></Parallel>", False, False, "2 outlines but 3"),
    (f"<Parallel>{T}</Parallel>", False, False, "unexpected <Thread>"),  # outlines first
    (f"<Parallel>{OUT}junk{T}</Parallel>", False, False, "text between"),
    (f"<Parallel>{OUT}{T}junk</Parallel>", False, False, "text between"),
    (
        f"<Parallel>{OUT}<Thread>1: a<Thread>2</Thread></Thread></Parallel>",
        False,
        False,
        "unexpected",
    ),
    (f"<Parallel>{OUT}{OUT}{T}</Parallel>", False, False, "unexpected <Outlines>"),
    (f"<Parallel>{OUT}<Thread>1: a</Outline></Parallel>", False, False, "unexpected </Outline>"),
]


@pytest.mark.parametrize(("text", "parallel", "well_formed", "error"), STRUCTURE)
def test_structure(text, parallel, well_formed, error):
    trace = parse_parallel(text)
    assert (trace.parallel, trace.well_formed) == (parallel, well_formed), trace.error
    assert error in trace.error


def test_lengths_count_sequential_parts_and_the_longest_thread():
    trace = parse_parallel(GOOD)
    block = trace.blocks[0]
    assert block.outlines == ("1: a", "2: b")
    assert [GOOD[a:b] for a, b in block.threads] == [
        "<Thread>1: aa</Thread>",
        "<Thread>2: bbbb</Thread>",
    ]
    lengths = trace.lengths()
    shorter = len("<Thread>1: aa</Thread>")
    assert lengths.total == len(GOOD)
    assert lengths.critical_path == len(GOOD) - shorter
    assert lengths.acceleration == pytest.approx(len(GOOD) / (len(GOOD) - shorter))
    assert lengths.eta == pytest.approx(shorter / len(GOOD))


def test_lengths_use_the_given_count_and_malformed_is_sequential():
    words = lambda s: len(s.split())  # noqa: E731
    assert parse_parallel(GOOD).lengths(words).total == len(GOOD.split())
    bad = parse_parallel(f"<Parallel>{OUT}{T}")
    assert bad.lengths().critical_path == bad.lengths().total
    assert bad.lengths().acceleration == 1.0 and bad.lengths().eta == 0.0


def _bounded(text, limit_s=2.0):
    start = time.perf_counter()
    trace = parse_parallel(text)
    assert time.perf_counter() - start < limit_s
    return trace


@pytest.mark.parametrize(
    "text",
    [
        "<Parallel>" * 100_000,  # deep nesting
        "<Parallel>" + OUT + "<Thread>x" * 50_000,
        ("<Parallel>" + OUT + T + "</Parallel>") * 1_000 + "</Thread>",
        "<" * 150_000 + "Parallel>" + "</" * 10_000,
        "\x00\xff<Thread>\ud800" * 10_000,
    ],
)
def test_hostile_inputs_are_scored_in_bounded_time(text):
    trace = _bounded(text)
    assert not trace.parallel and trace.error


def test_many_valid_blocks_parse_linearly():
    text = ("<Parallel>" + OUT + T + "</Parallel>join ") * 1_000
    trace = _bounded(text)
    assert trace.parallel and len(trace.blocks) == 1_000


def test_huge_binary_and_non_text_inputs():
    assert "longer than" in _bounded("a" * (MAX_CHARS + 1)).error
    assert _bounded(bytes(range(256)) * 100).well_formed  # decoded, no tags: sequential
    assert parse_parallel(GOOD.encode()).parallel
    assert "not text" in parse_parallel(None).error
    assert "not text" in parse_parallel(12).error
