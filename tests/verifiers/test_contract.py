"""The verifier contract for math and science: registered, picklable, frozen, never raising."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

import verifiers
from verifiers import Status, Verdict, get_verifier, known_verifiers, verify
from verifiers.math_answer import extract_answer, is_scorable

NAMES = ["math", "science_mcq", "science_numeric"]
REFERENCES = {
    "math": {"answer": "42"},
    "science_mcq": {"answer": "B", "num_options": 4},
    "science_numeric": {"answer": "42"},
}
ODD_COMPLETIONS = [
    None,
    b"\\boxed{42}",
    42,
    [{"role": "assistant", "content": "Answer: 42"}],
    "\udcff\x00",
    "<think>unterminated \\boxed{42}",
    "Answer: 42</think>",
    "\\boxed{42}" * 10_000,
]


def test_verifiers_package_is_ours() -> None:
    # PyPI has an unrelated "verifiers" distribution; this one must shadow it
    assert Path(verifiers.__file__).resolve().parent == Path(__file__).resolve().parents[2] / "verifiers"


@pytest.mark.parametrize("name", NAMES)
def test_registered_frozen_and_picklable(name: str) -> None:
    assert name in known_verifiers()
    verifier = get_verifier(name)
    assert verifier.name == name
    assert dataclasses.is_dataclass(verifier)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verifier.name = "other"  # type: ignore[misc]
    clone = pickle.loads(pickle.dumps(verifier))
    assert clone == verifier
    assert clone.verify("Answer: 42", REFERENCES[name]) == verifier.verify("Answer: 42", REFERENCES[name])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("completion", ODD_COMPLETIONS, ids=range(len(ODD_COMPLETIONS)))
def test_any_completion_gives_a_verdict(name: str, completion: object) -> None:
    verdict = verify(completion, REFERENCES[name], name)
    assert isinstance(verdict, Verdict)
    assert verdict.status is not Status.ERROR, verdict
    assert verdict.score == (1.0 if verdict.is_correct else 0.0)


BAD_REFERENCES = [
    ("math", {}),
    ("math", {"answer": None}),
    ("math", {"answer": []}),
    ("math", {"answer": "   "}),
    ("science_mcq", {}),
    ("science_mcq", {"answer": "?"}),
    ("science_mcq", {"answer": "A", "num_options": "four"}),
    ("science_numeric", {}),
    ("science_numeric", {"answer": None}),
    ("science_numeric", {"answer": "about nine"}),
]


@pytest.mark.parametrize(("name", "reference"), BAD_REFERENCES)
def test_bad_reference_is_an_error_verdict(name: str, reference: dict) -> None:
    verdict = verify("Answer: 42", reference, name)
    assert verdict.status is Status.ERROR and verdict.details.startswith("unscorable reference")


def test_unknown_option_fails_fast() -> None:
    with pytest.raises(TypeError):
        get_verifier("math", no_such_option=True)


def test_math_module_api() -> None:
    assert extract_answer("x\nAnswer: 7") == "7"
    assert is_scorable({"answer": "7"}) and not is_scorable({"answer": ""})


def test_format_gate_applies() -> None:
    gate = verifiers.ReasoningFormat(format_gate=True)
    for name in NAMES:
        verdict = verify("Answer: 42", REFERENCES[name], name, reasoning=gate)
        assert verdict.status is Status.FORMAT_ERROR
        ok = verify(
            "<think>hm</think>Answer: B" if name == "science_mcq" else "<think>x</think>Answer: 42",
            REFERENCES[name],
            name,
            reasoning=gate,
        )
        assert ok.is_correct, (name, ok)
