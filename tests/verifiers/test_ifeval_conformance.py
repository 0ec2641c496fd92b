"""IFEval conformance: the published GPT-4 responses score as in the paper and Google's code.

Responses join to prompts by exact prompt string (540 of 541). The one response that does
not join (key 2785) answered an older wording of its prompt ("at least one placeholder"
instead of 3), so it is skipped, as Google's evaluation skips it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.ifeval import Accuracy, IFEvalVerifier, accuracy, evaluate_response
from verifiers.ifeval import unsupported_instructions as unsupported

INPUTS = "instruction_following/ifeval_input_data.jsonl"
RESPONSES = "instruction_following/ifeval_input_response_data_gpt4_20231107_145030.jsonl"


@pytest.fixture(scope="module")
def joined(shared_data: Path, read_jsonl) -> list[tuple[str, dict]]:
    by_prompt = {row["prompt"]: row for row in read_jsonl(shared_data / INPUTS)}
    responses = list(read_jsonl(shared_data / RESPONSES))
    pairs = [(r["response"], by_prompt[r["prompt"]]) for r in responses if r["prompt"] in by_prompt]
    assert (len(responses), len(pairs)) == (541, 540)
    return pairs


@pytest.fixture(scope="module")
def scores(joined: list[tuple[str, dict]]) -> dict[str, Accuracy]:
    result = {
        mode: accuracy(evaluate_response(text, row, loose=mode == "loose") for text, row in joined)
        for mode in ("strict", "loose")
    }
    for mode, acc in result.items():
        print(
            f"\nIFEval GPT-4 {mode}: prompt-level {100 * acc.prompt_level:.2f}% "
            f"({acc.prompts_followed}/{acc.prompts}), instruction-level "
            f"{100 * acc.instruction_level:.2f}% ({acc.instructions_followed}/{acc.instructions})"
        )
    return result


def test_every_instruction_in_the_benchmark_is_supported(shared_data: Path, read_jsonl):
    assert unsupported(read_jsonl(shared_data / INPUTS)) == {}


def test_strict_accuracy_matches_the_paper(scores: dict[str, Accuracy]):
    strict = scores["strict"]
    assert strict.instructions == 832
    assert abs(100 * strict.prompt_level - 76.89) <= 0.6
    assert abs(100 * strict.instruction_level - 83.57) <= 0.6


def test_loose_accuracy_matches_the_reference_implementation(scores: dict[str, Accuracy]):
    loose = scores["loose"]
    assert 78.8 <= 100 * loose.prompt_level <= 80.3
    assert 84.9 <= 100 * loose.instruction_level <= 86.2


def test_verifier_reward_agrees_with_the_prompt_level_metric(
    joined: list[tuple[str, dict]], scores: dict[str, Accuracy]
):
    verifier = IFEvalVerifier()
    rewards = [verifier.verify(text, row).score for text, row in joined]
    assert sum(rewards) == scores["strict"].prompts_followed


def test_the_evaluation_summary_reports_the_same_levels_from_the_verdicts(joined, scores):
    """``rlvr.evaluate``'s IFEval figures (from each verdict's summary) equal the checkers'."""
    from rlvr.evaluation.metrics import ifeval_levels

    verifier = IFEvalVerifier()
    rows = [{"verifier": "ifeval"} for _ in joined]
    verdicts = [[verifier.verify(text, row)] for text, row in joined]
    levels = ifeval_levels(rows, verdicts)
    strict = scores["strict"]
    assert levels is not None
    assert levels["prompt_level"] == pytest.approx(strict.prompt_level)
    assert levels["instruction_level"] == pytest.approx(strict.instruction_level)
    assert levels["mean"] == pytest.approx((strict.prompt_level + strict.instruction_level) / 2)
    assert ifeval_levels([{"verifier": "math"}], verdicts[:1]) is None
