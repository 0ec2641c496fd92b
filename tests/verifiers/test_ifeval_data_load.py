"""Instruction rows at load: kept rows are all scorable, unknown ids are counted drops.

Runs the instruction adapters over the hand-written Hub-layout fixtures and over rows
naming ids or arguments the instruction table rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.quality import QualityLog
from tasks.registry import load_task_rows
from verifiers.ifeval import IFEvalVerifier
from verifiers.verdict import Status

HUB = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


@pytest.mark.parametrize(
    ("task", "fixture", "kept"),
    [
        ("ifbench", "ifbench.jsonl", 2),
        ("rlvr_ifeval", "rlvr_ifeval.jsonl", 2),  # its third row names no known function
        ("nemotron_instruction", "nemotron_blend.jsonl", 1),
    ],
)
def test_hub_fixture_rows_are_all_scorable(task: str, fixture: str, kept: int):
    quality = QualityLog()
    rows = load_task_rows(task, data_files=str(HUB / fixture), quality=quality)
    assert len(rows) == kept
    for row in rows:
        verdict = IFEvalVerifier().verify("An answer.", json.loads(row["reference"]))
        assert verdict.status is not Status.ERROR, verdict
    assert not any("instruction" in reason for c in quality.sources.values() for reason in c.dropped)


def _ifbench_rows(tmp_path: Path, rows: list[dict]) -> str:
    path = tmp_path / "ifbench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_unknown_or_malformed_instructions_are_counted_drops(tmp_path: Path):
    def row(key: int, ids: list[str], kwargs: list[dict]) -> dict:
        return {
            "key": key,
            "prompt": f"Prompt {key}.",
            "instruction_id_list": ids,
            "kwargs": kwargs,
        }

    files = _ifbench_rows(
        tmp_path,
        [
            row(1, ["words:alphabet"], [{}]),
            row(2, ["words:made_up"], [{}]),
            row(3, ["count:word_count_range"], [{"min_words": 9, "max_words": 2}]),
            row(4, ["count:numbers"], [{"N": -1}]),
            row(5, ["words:made_up"], [{"N": 2}]),
        ],
    )
    quality = QualityLog()
    rows = load_task_rows("ifbench", data_files=files, quality=quality)
    assert [json.loads(r["reference"])["instruction_id_list"] for r in rows] == [["words:alphabet"]]
    dropped = quality.counts("ifbench/train").dropped
    assert dropped["unsupported instruction id words:made_up"] == 2
    malformed = {reason: n for reason, n in dropped.items() if reason.startswith("malformed")}
    assert len(malformed) == 2 and all(n == 1 for n in malformed.values())
    assert any("count:word_count_range" in reason for reason in malformed)
    assert any("count:numbers" in reason for reason in malformed)
