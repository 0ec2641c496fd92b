"""Which code the code verifier runs: the documented fenced-block rule, as a table."""

from __future__ import annotations

import pytest

from verifiers.code.extract import extract_code

F = "```"
CASES = [
    # (completion, allow_unfenced, expected code)
    (f"{F}python\nprint(1)\n{F}", False, "print(1)\n"),
    (f"{F}python\na = 1\n{F}\ntext\n{F}python\nb = 2\n{F}", False, "b = 2\n"),
    (f"{F}python\na = 1\n{F}\n{F}bash\nls\n{F}", False, "a = 1\n"),  # last *python* block wins
    (f"{F}\nx = 3\n{F}", False, "x = 3\n"),  # untagged block
    (f"{F}cpp\nint x;\n{F}\n{F}text\nout\n{F}", False, "out\n"),  # no python: last of any tag
    (f"{F}Python3 title\ny = 4\n{F}", False, "y = 4\n"),
    (f"  {F}py\nz = 5\n  {F}", False, "z = 5\n"),  # indented fences
    (f"intro\n{F}python\ndef f():\n    return 1", False, "def f():\n    return 1"),  # unclosed
    ("def f():\n    return 1", False, None),
    ("def f():\n    return 1", True, "def f():\n    return 1"),
    ("", True, None),
    ("just prose, no code", False, None),
    (f"{F}python\r\nprint(1)\r\n{F}\r\n", False, "print(1)\r\n"),  # CRLF line ends
    (f"{F}{F}\nx = 1\n", False, None),  # a backtick in the info string opens nothing
]


@pytest.mark.parametrize(("completion", "allow_unfenced", "expected"), CASES)
def test_extract_code(completion, allow_unfenced, expected):
    assert extract_code(completion, allow_unfenced) == expected


@pytest.mark.parametrize(
    "unit",
    [
        f"{F}x\n",
        f"{F}\n",
        f"{F}python\nprint(1)\n",
        F + " " * 199_996 + "`",  # one fence line of blanks: the old regex was quadratic here
    ],
)
def test_extraction_is_linear_on_hostile_fences(unit):
    import time

    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    start = time.monotonic()
    extract_code(text)
    assert time.monotonic() - start < 20.0  # quadratic would take minutes; linear, milliseconds
