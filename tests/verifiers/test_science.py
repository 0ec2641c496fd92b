"""Tables for the science verifiers: MCQ letter extraction and hedges, numeric answers, shuffling."""

from __future__ import annotations

import pytest

from verifiers import Status, get_verifier, verify
from verifiers.science import LETTERS, letters_in, shuffle_options

MCQ = {"answer": "C", "num_options": 4}
C, W, F, E = Status.CORRECT, Status.WRONG, Status.FORMAT_ERROR, Status.ERROR

MCQ_TABLE = [
    # the Answer: convention
    ("Answer: C", MCQ, C),
    ("work\nAnswer: (C)", MCQ, C),
    ("**Answer:** C. Mitochondria", MCQ, C),
    ("Final Answer: [C]", MCQ, C),
    ("Answer: option C", MCQ, C),
    ("Answer: c", MCQ, C),
    ("Answer: B", MCQ, W),
    ("Answer: B\nwait\nAnswer: C", MCQ, C),  # the last answer line counts
    ("Answer: A cell membrane", MCQ, W),  # leading letter A (an article, but also option A)
    # documented fallbacks
    ("so \\boxed{C}", MCQ, C),
    ("so \\boxed{\\text{C}}", MCQ, C),
    ("so \\boxed{D}", MCQ, W),
    ("The correct answer is (C).", MCQ, C),
    ("the answer is C because ...", MCQ, C),
    ("I pick\n(C)", MCQ, C),
    ("I pick\n**C**", MCQ, C),
    ("Answer: C\n\\boxed{D}", MCQ, C),  # Answer: line has priority
    # hedges
    ("Answer: A or C", MCQ, W),
    ("Answer: C or A", MCQ, W),
    ("Answer: C, D", MCQ, W),
    ("Answer: C/D", MCQ, W),
    ("Answer: CD", MCQ, W),
    ("Answer: (C) and (D)", MCQ, W),
    ("Answer: both C and D", MCQ, W),
    ("\\boxed{C, D}", MCQ, W),
    ("The answer is either (C) or (B).", MCQ, W),
    # outside the options, nothing found
    ("Answer: E", MCQ, W),
    ("Answer: J", {"answer": "J", "num_options": 10}, C),
    ("Answer: I", {"answer": "I", "num_options": 10}, C),
    ("Answer: I think it is C", MCQ, F),  # "I" the pronoun is not option I
    ("I like it a lot", MCQ, F),
    ("", MCQ, F),
    ("Answer:", MCQ, F),
    # unscorable references
    ("Answer: C", {"answer": "K", "num_options": 4}, E),
    ("Answer: C", {"answer": "E", "num_options": 4}, E),
    ("Answer: C", {"answer": "C", "num_options": 40}, E),
    ("Answer: C", {}, E),
]


@pytest.mark.parametrize(("completion", "reference", "expected"), MCQ_TABLE)
def test_mcq_table(completion: str, reference: dict, expected: Status) -> None:
    verdict = verify(completion, reference, "science_mcq")
    assert verdict.status is expected, verdict
    if expected is E:
        assert verdict.details.startswith("unscorable reference")


def test_hedge_details_name_the_letters() -> None:
    verdict = verify("Answer: A or C", MCQ, "science_mcq")
    assert verdict.extracted == "A,C" and "hedged" in verdict.details
    assert letters_in("A, B, C") == ["A", "B", "C"]


NUM = {"answer": "9.81", "rel_tol": 0.01, "unit": "m/s^2"}
NUMERIC_TABLE = [
    ("Answer: 9.81 m/s^2", NUM, C),
    ("Answer: 9.8 m/s^2", NUM, C),  # within 1%
    ("Answer: 9.5 m/s^2", NUM, W),
    ("Answer: 9.81", NUM, C),  # a bare number is accepted by default
    ("Answer: $9.81\\,\\text{m/s}^2$", NUM, C),
    ("\\boxed{9.81\\ \\mathrm{m\\,s^{-2}}}", NUM, C),
    ("Answer: 9.81 m/s² (rounded)", NUM, C),
    ("Answer: 981 cm/s^2", NUM, C),  # SI prefix converted
    ("Answer: 0.00981 km/s^2", NUM, C),
    ("Answer: 981 m/s^2", NUM, W),
    ("Answer: 9.81 kg", NUM, W),  # unit mismatch
    ("Answer: 3 \\times 10^{8} m/s", {"answer": "3e8", "unit": "m/s"}, C),
    ("Answer: 2.998e8 m/s", {"answer": "3e8", "unit": "m/s"}, C),
    ("Answer: 3.0 x 10^8", {"answer": "3e8"}, C),
    ("Answer: 3 \\times 10^{7}", {"answer": "3e8"}, W),
    ("Answer: 1.6 \\times 10^{-19} C", {"answer": "1.602e-19", "unit": "C"}, C),
    ("Answer: −2.5e-3", {"answer": "-0.0025"}, C),
    ("Answer: 2.5e-3", {"answer": "-0.0025"}, W),
    ("Answer: 1,234.5 J", {"answer": "1234.5 J"}, C),  # unit may live in the answer string
    ("Answer: 1.2345 kJ", {"answer": "1234.5 J"}, C),
    ("Answer: 300 cm^2", {"answer": "0.03", "unit": "m^2"}, C),
    ("Answer: 300 cm", {"answer": "0.03", "unit": "m^2"}, W),
    ("Answer: 8.3 J/mol*K", {"answer": "8.314", "unit": "J mol^-1 K^-1"}, C),
    ("Answer: 105", {"answer": "100", "rel_tol": 0.1}, C),  # per-row tolerance
    ("Answer: 0", {"answer": "0"}, C),
    ("Answer: 0.001", {"answer": "0"}, W),
    ("the speed is fast", NUM, F),
    ("Answer: 1e999", NUM, F),  # overflow is no number
    ("Answer: 9.81", {"answer": "about nine"}, E),
    ("Answer: 9.81", {"answer": "9.81", "unit": "e9999"}, E),  # a unit that does not parse
    ("Answer: 9.81", {"answer": "9.81", "unit": "m" * 400}, E),
]


@pytest.mark.parametrize(("completion", "reference", "expected"), NUMERIC_TABLE)
def test_numeric_table(completion: str, reference: dict, expected: Status) -> None:
    verdict = verify(completion, reference, "science_numeric")
    assert verdict.status is expected, verdict


def test_numeric_options() -> None:
    strict = get_verifier("science_numeric", require_unit=True)
    assert verify("Answer: 9.81", NUM, strict).status is W
    assert verify("Answer: 9.81 m/s^2", NUM, strict).is_correct
    text = "so g is about 9.81 m/s^2 here"
    assert verify(text, NUM, "science_numeric").status is F
    assert verify(text, NUM, get_verifier("science_numeric", fallback_last_number=True)).is_correct


@pytest.mark.parametrize("n", [2, 4, 7, 10])
@pytest.mark.parametrize("seed", [0, 1, 123])
def test_shuffle_keeps_gold_letter_right(n: int, seed: int) -> None:
    options = [f"option {i}" for i in range(n)]
    for gold_index in range(n):
        shuffled, letter = shuffle_options(options, gold_index, seed)
        assert sorted(shuffled) == sorted(options)
        assert shuffled[LETTERS.index(letter)] == options[gold_index]
        assert shuffle_options(options, gold_index, seed) == (shuffled, letter)


def test_shuffle_changes_order_across_seeds_and_rejects_bad_input() -> None:
    options = [f"o{i}" for i in range(10)]
    assert len({tuple(shuffle_options(options, 0, s)[0]) for s in range(20)}) > 10
    with pytest.raises(ValueError):
        shuffle_options(["only"], 0, 0)
    with pytest.raises(ValueError):
        shuffle_options(["a", "b"], 2, 0)
