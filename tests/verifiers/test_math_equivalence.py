"""Hand-written table of math equivalences and non-equivalences, plus extraction rules."""

from __future__ import annotations

import pytest

from verifiers import Status, get_verifier, verify
from verifiers.math_answer import extract_answer, is_scorable

# (model's final answer, gold, should grade correct)
EQUIVALENCE = [
    # fractions and decimals
    ("\\frac{1}{2}", "0.5", True),
    ("0.5", "\\frac{1}{2}", True),
    ("\\dfrac{3}{4}", "\\frac34", True),
    ("3/4", "\\frac{3}{4}", True),
    ("0.75", "\\tfrac{3}{4}", True),
    ("\\frac{2}{4}", "\\frac{1}{2}", True),
    ("-\\frac{1}{3}", "\\frac{-1}{3}", True),
    ("0.333333", "\\frac{1}{3}", True),
    ("0.33", "\\frac{1}{3}", False),
    ("\\frac{1}{3}", "\\frac{1}{4}", False),
    ("0.0000673", "0.0000672", False),
    ("6.72 \\times 10^{-5}", "0.0000672", True),
    ("1.5", "\\frac{3}{2}", True),
    ("2.50", "2.5", True),
    # integers, signs, thousands separators
    ("1,000", "1000", True),
    ("1000", "1{,}000", True),
    ("-5", "-5", True),
    ("5", "-5", False),
    ("042", "42", True),
    ("25", "025", True),
    ("43", "42", False),
    ("1001", "1000", False),
    ("12", "21", False),
    ("\\frac{3}{2}", "\\frac{2}{3}", False),
    ("2", "\\sqrt{2}", False),
    ("x^2", "2x", False),
    # radicals, pi, powers
    ("2\\sqrt{2}", "\\sqrt{8}", True),
    ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}", True),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", True),
    ("\\sqrt{3}", "\\sqrt{2}", False),
    ("2\\pi", "2 \\pi", True),
    ("\\pi", "2\\pi", False),
    ("6.283185", "2\\pi", True),
    ("2^{10}", "1024", True),
    ("2^{10}", "1000", False),
    ("3^2", "9", True),
    # algebraic expressions
    ("x^2+2x+1", "(x+1)^2", True),
    ("2x+1", "1+2x", True),
    ("x^2-1", "(x-1)(x+1)", True),
    ("x^2+1", "(x+1)^2", False),
    ("p-q", "p - q", True),
    ("q-p", "p - q", False),
    # equations: "x = 5" against gold 5
    ("x = 5", "5", True),
    ("x=4", "5", False),
    ("y = 2x + 3", "y=2x+3", True),
    # intervals and sets
    ("[2,5)", "[2, 5)", True),
    ("(2,5)", "[2, 5)", False),
    ("(-\\infty, 3]", "(-\\infty,3]", True),
    ("(-\\infty, 3)", "(-\\infty,3]", False),
    ("\\{1,2,3\\}", "\\{3,2,1\\}", True),
    ("\\{1,2\\}", "\\{1,2,3\\}", False),
    ("1, 2, 3", "1,2,3", True),
    ("(1,2)\\cup(3,4)", "(1,2) \\cup (3,4)", True),
    # tuples / points
    ("(1, -2)", "(1,-2)", True),
    ("(-2, 1)", "(1,-2)", False),
    # units and text wrappers
    ("5\\text{ cm}", "5", True),
    ("864 \\mbox{ inches}^2", "864", True),
    ("12 \\text{ dollars}", "12", True),
    ("\\$18", "18", True),
    ("\\$19", "18", False),
    ("90^\\circ", "90", True),
    ("\\text{Monday}", "\\text{Monday}", True),
    ("\\text{Tuesday}", "\\text{Monday}", False),
    ("\\text{(C)}", "\\text{(C)}", True),
    ("\\text{(D)}", "\\text{(C)}", False),
    # percent
    ("50\\%", "50", True),
    ("50", "50\\%", True),
    ("0.5", "50\\%", True),
    ("40\\%", "50", False),
    ("0.4", "50\\%", False),
    # complex numbers, trig
    ("1+2i", "1 + 2i", True),
    ("1-2i", "1+2i", False),
    ("\\frac{\\sqrt{3}}{2}", "\\sin\\frac{\\pi}{3}", True),
    ("\\cot x", "\\cot x", True),
    ("\\tan x", "\\cot x", False),
    # numbers with a base subscript: same digits in another base, or bare, are different
    ("52_9", "52_9", True),
    ("52_{9}", "52_9", True),
    ("\\text{52}_{9}", "52_9", True),
    ("\\text{52}_9", "52_{9}", True),
    ("52_9", "52_8", False),
    ("52_8", "52_9", False),
    ("52_9", "52", False),
    ("52", "52_9", False),
    ("\\text{52}_{9}", "52", False),
    ("47", "52_9", False),  # its decimal value is not the base-9 answer asked for
    ("59_8", "59", False),  # 9 is no digit in base 8
    ("\\text{AB}_{12}", "\\text{AB}_{12}", True),
    ("\\text{BA}_{12}", "\\text{AB}_{12}", False),
    ("52_{10}", "52", True),  # base ten is the plain number
    ("x_1", "x_1", True),  # a variable with an index is not a based number
    # matrices
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", True),
    ("\\begin{pmatrix} 2 \\\\ 1 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", False),
]


@pytest.mark.parametrize(("answer", "gold", "expected"), EQUIVALENCE)
def test_equivalence_table(answer: str, gold: str, expected: bool) -> None:
    verdict = verify(f"Work...\n\\boxed{{{answer}}}", {"answer": gold}, "math")
    assert verdict.is_correct is expected, verdict


def test_table_is_large_and_balanced() -> None:
    assert len(EQUIVALENCE) >= 60
    assert sum(1 for *_, ok in EQUIVALENCE if not ok) >= 25


# (completion, extracted answer with default options)
EXTRACTION = [
    ("so \\boxed{12}", "12"),
    ("\\boxed{1} then later \\boxed{2}", "2"),
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}"),
    ("\\fbox{7}", "7"),
    ("\\boxed {7}", "7"),
    ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"),
    ("\\boxed{3} is wrong. \\boxed{4", "3"),  # unbalanced last box is ignored
    ("work\nAnswer: 42", "42"),
    ("work\n**Answer:** $\\frac{1}{2}$.", "\\frac{1}{2}"),
    ("work\nFinal Answer: 7", "7"),
    ("Answer: 3\nmore work\nAnswer: 5", "5"),
    ("\\boxed{3}\nAnswer: 5", "5"),  # the later of the two wins
    ("Answer: \\boxed{5} apples", "5"),
    ("no final answer, just 41 and 42", None),
    ("", None),
    ("The answer is probably big", None),
    # prose on the answer line: the answer inside it
    ("Final Answer: The largest n is 34.", "34"),
    ("Final Answer: The largest $n$ is 34.", "34"),
    ("Final Answer: The final answer is $28 \\%$. I hope it is correct.", "28 \\%"),
    ("Final Answer: The final answer is 7.78.", "7.78"),
    ("Final Answer: Jane started growing Sphere 3 hours ago.", "3"),
    ("Final Answer: The final answer is \\((-6, 10)\\). I hope it is correct.", "(-6, 10)"),
    ('Final Answer: The final answer is "$12 $ and $13 $".', "12, 13"),
    ("Answer: \\text{Monday}", "\\text{Monday}"),
    ("Answer: Monday", "Monday"),  # prose that holds no narrower answer stays whole
    # "Final Answer:" inside a line; the last marker of the line wins
    ("... so the Final Answer: 12", "12"),
    ("so $x=3$. Final Answer: The final answer is 3. Note: Final Answer: 5", "5"),
    ("\\boxed{255} so far. Final Answer: The final answer is $10,455$.", "10,455"),
    ("so then the answer: 7", None),  # mid-line, only "Final Answer:" counts
    # several boxes written as one answer are one list; other text between them ends it
    ("\\boxed{1}, \\boxed{2}", "1, 2"),
    ("\\boxed{1} and \\boxed{2} and \\boxed{3}", "1, 2, 3"),
    ("\\[ \\boxed{-2} \\quad \\text{and} \\quad \\boxed{1}. \\]", "-2, 1"),
    ("$\\boxed{1}\\boxed{2}$", "1, 2"),
    ("\\boxed{1} or \\boxed{2}", "1, 2"),
    ("\\boxed{3}, no wait: \\boxed{4}", "4"),
    ("\\boxed{1} papers and \\boxed{2} bins", "2"),
]


@pytest.mark.parametrize(("completion", "expected"), EXTRACTION)
def test_extraction(completion: str, expected: str | None) -> None:
    assert extract_answer(completion) == expected


# several boxes as one set: (completion, gold, should grade correct)
BOX_SETS = [
    ("\\boxed{1}, \\boxed{2}", "1, 2", True),
    ("\\boxed{1}, \\boxed{2}", "\\{1,2\\}", True),
    ("\\boxed{2}, \\boxed{1}", "1, 2", True),  # a set: order does not matter
    ("\\boxed{1}, \\boxed{2}", "2", False),  # listing candidates is not the answer
    ("\\boxed{1}, \\boxed{2}", "1, 2, 3", False),
    ("\\boxed{1,2}", "2", False),
    ("\\boxed{(1, 2)}, \\boxed{(2, 1)}", "(2,1),(1,2)", True),
    ("\\boxed{3}, no wait: \\boxed{4}", "4", True),
]


@pytest.mark.parametrize(("completion", "gold", "expected"), BOX_SETS)
def test_boxes_as_one_set(completion: str, gold: str, expected: bool) -> None:
    assert verify(completion, {"answer": gold}, "math").is_correct is expected


def test_last_number_fallback_is_opt_in() -> None:
    text = "I computed 3 then 1,234 apples"
    assert extract_answer(text) is None
    assert extract_answer(text, fallback_last_number=True) == "1,234"
    assert verify(text, {"answer": "1234"}, "math").status is Status.FORMAT_ERROR
    on = get_verifier("math", fallback_last_number=True)
    assert verify(text, {"answer": "1234"}, on).is_correct
    per_row = {"answer": "1234", "fallback_last_number": True}
    assert verify(text, per_row, "math").is_correct


@pytest.mark.parametrize(
    ("reference", "scorable"),
    [
        ({"answer": "42"}, True),
        ({"answer": "\\frac{1}{2}"}, True),
        ({"answer": 7}, True),
        ({"answer": ""}, False),
        ({"answer": None}, False),
        ({}, False),
        ({"answer": ["1"]}, False),
    ],
)
def test_unscorable_reference_is_an_error_not_wrong(reference: dict, scorable: bool) -> None:
    assert is_scorable(reference) is scorable
    verdict = verify("\\boxed{42}", reference, "math")
    if not scorable:
        assert verdict.status is Status.ERROR
        assert verdict.details.startswith("unscorable reference")
    else:
        assert verdict.status in (Status.CORRECT, Status.WRONG)


@pytest.mark.parametrize(
    ("completion", "status"),
    [
        ("\\boxed{" + "9" * 5000 + "}", Status.WRONG),  # too long to be an answer
        ("\\boxed{" + "{" * 40 + "1" + "}" * 40 + "}", Status.WRONG),  # absurd nesting
        ("\\boxed{10^{10^{10}}+1}", Status.WRONG),  # would take sympy forever
        ("\\boxed{9^{999999}}", Status.WRONG),
        ("nothing here", Status.FORMAT_ERROR),
    ],
)
def test_bounded_inputs(completion: str, status: Status) -> None:
    assert verify(completion, {"answer": "1"}, "math").status is status


def test_think_section_is_not_graded() -> None:
    text = "<think>maybe \\boxed{3}</think> The answer is \\boxed{4}."
    assert verify(text, {"answer": "4"}, "math").is_correct
    assert not verify(text, {"answer": "3"}, "math").is_correct
