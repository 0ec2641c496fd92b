"""The report's answer lengths and before/after answers, read from evaluation records."""

from __future__ import annotations

from pathlib import Path

from rlvr.evaluation.results import write_results
from rlvr.reporting.answers import answers_markdown, first_answers, length_table
from rlvr.reporting.tables import ModelResult


def _records(label: str, answers: dict[str, tuple[str, float]]) -> list[dict]:
    out = []
    for rec_id, (text, score) in answers.items():
        for i, mode in enumerate(("sample", "greedy")):
            text_of_mode = text if i else "sampled " + text
            out.append(
                {
                    "model": label,
                    "benchmark": "micro_instruction",
                    "id": rec_id,
                    "mode": mode,
                    "sample": 0,
                    "completion": text_of_mode,
                    "status": "correct" if score else "wrong",
                    "score": score,
                    "extracted": None,
                }
            )
    return out


def _study(tmp_path: Path) -> tuple[Path, list[ModelResult]]:
    before = {"a": ("one two three", 0.0), "b": ("ok", 1.0), "c": ("x y", 0.0)}
    after = {"a": ("ONE TWO THREE FOUR", 1.0), "b": ("no", 0.0), "c": ("x y z", 0.0)}
    results = []
    for label, role, answers, info in (
        ("sft", "sft", before, {}),
        ("instruction-seed0", "expert", after, {"domains": ["instruction"]}),
    ):
        write_results(tmp_path / "eval" / label, "micro_instruction", _records(label, answers), {})
        results.append(ModelResult(label, role, info, {"micro_instruction": {}}))
    return tmp_path, results


def test_lengths_are_mean_words_of_the_greedy_answers(tmp_path):
    study, results = _study(tmp_path)
    table = length_table(study, results)
    assert table.columns == ("model", "micro_instruction")
    assert dict(table.rows) == {
        "sft": round((3 + 1 + 2) / 3, 1),
        "instruction-seed0": round((4 + 1 + 3) / 3, 1),
    }
    assert first_answers(study, "sft", "micro_instruction")["a"]["completion"] == "one two three"


def test_answers_show_gains_first_then_losses_and_skip_unchanged_verdicts(tmp_path):
    study, results = _study(tmp_path)
    text = answers_markdown(study, results, per_bench=5)
    assert text.index("micro_instruction / a") < text.index("micro_instruction / b")
    assert "micro_instruction / c" not in text
    assert "ONE TWO THREE FOUR" in text and "sft (wrong, 3 words)" in text
    assert "sampled" not in text  # the greedy answer is shown where there is one


def test_no_starting_model_means_no_answers_section(tmp_path):
    study, results = _study(tmp_path)
    assert answers_markdown(study, [r for r in results if r.role != "sft"]) == ""
