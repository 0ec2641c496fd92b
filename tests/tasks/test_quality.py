"""Data quality: prompt dedup, counted drops, missing-column errors, per-domain statistics."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tasks.quality import (
    MissingColumnError,
    QualityLog,
    dedup,
    domain_stats,
    format_report,
    normalise_prompt,
    reference_parses,
)
from tasks.registry import load_task_rows
from tasks.schema import make_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


def row(text: str, source: str = "s/test", domain: str = "math", i: int = 0) -> dict:
    return make_row(
        prompt=[{"role": "user", "content": text}],
        domain=domain,
        verifier="math",
        reference={"answer": "1"},
        source=source,
        id=f"{source}:{i}",
    )


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("What is 2+2?", "what  is 2+2?", True),
        ("What is 2+2?", "What is\n\t2+2?  ", True),
        ("What is 2+2?", "What is 2+3?", False),
        ("A. x\nB. y", "a. x b. y", True),
    ],
)
def test_normalise_prompt(a, b, same):
    assert (normalise_prompt(a) == normalise_prompt(b)) is same


def test_dedup_keeps_first_and_counts_duplicates_per_source():
    quality = QualityLog()
    rows = [row("Add 2 and 2", i=0), row("add  2 and 2", i=1), row("Add 3 and 3", i=2)]
    kept = dedup(rows, quality)
    assert [r["id"] for r in kept] == ["s/test:0", "s/test:2"]
    assert quality.counts("s/test").duplicates == 1


def test_dedup_across_calls_with_shared_seen_set():
    seen: set[str] = set()
    first = dedup([row("Same prompt", "a/test")], seen=seen)
    second = dedup([row("same prompt", "b/test"), row("other", "b/test", i=1)], seen=seen)
    assert len(first) == 1 and [r["id"] for r in second] == ["b/test:1"]


@pytest.mark.parametrize(
    ("reference", "ok"),
    [
        ('{"answer": "4"}', True),
        ("{}", False),
        ("not json", False),
        ('["a list"]', False),
        (None, False),
    ],
)
def test_reference_parses(reference, ok):
    assert reference_parses({"reference": reference}) is ok


def test_drops_are_counted_and_logged_per_source(caplog):
    caplog.set_level(logging.INFO, logger="tasks.quality")
    rows = load_task_rows("math", data_files=str(FIXTURES / "math_lighteval.jsonl"))
    assert len(rows) == 2
    line = next(r.message for r in caplog.records if r.message.startswith("math/test"))
    assert "dropped 1" in line and "no \\boxed answer" in line
    assert any(r.levelno == logging.WARNING for r in caplog.records)


def test_missing_column_error_names_the_column(tmp_path):
    path = tmp_path / "gsm8k_like.jsonl"
    path.write_text(json.dumps({"question": "1+1?", "solution": "#### 2"}) + "\n")
    with pytest.raises(MissingColumnError) as err:
        load_task_rows("gsm8k", data_files=str(path))
    message = str(err.value)
    assert "'answer'" in message and "gsm8k" in message and "question" in message


def test_missing_column_inside_adapter_names_the_column(tmp_path):
    path = tmp_path / "blend.jsonl"
    path.write_text(json.dumps({"dataset": "nano_v3_sft_profiled_stem_mcqa", "options": []}) + "\n")
    with pytest.raises(MissingColumnError, match="'responses_create_params'"):
        load_task_rows("nemotron_science", data_files=str(path))


def test_domain_stats_and_report():
    rows = [row("abcd"), row("ab", i=1), row("abcdefgh", "c/test", "code", 2)]
    stats = domain_stats(rows)
    assert stats["math"].count == 2 and stats["math"].chars_min == 2
    assert stats["math"].chars_max == 4 and stats["math"].chars_mean == 3.0
    assert stats["code"].sources == ("c/test",)
    quality = QualityLog()
    quality.counts("s/test").read = 5
    quality.drop("s/test", "empty answer")
    report = format_report(stats, quality)
    assert "math" in report and "code" in report
    assert any(line.split()[:5] == ["s/test", "5", "0", "1", "0"] for line in report.splitlines())
