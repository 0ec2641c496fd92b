"""Task registry: lookup errors, loading contract, and cross-domain concatenation."""

from __future__ import annotations

import json
from pathlib import Path

import _requirements as required
import pytest

from tasks.quality import QualityLog
from tasks.registry import (
    TaskSpec,
    UnknownTaskError,
    get_task,
    known_tasks,
    load_task_rows,
    load_tasks,
    local_tasks,
    register_task,
    to_dataset,
)
from tasks.schema import COLUMNS, DOMAINS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"
needs_shared = required.needs_shared_data()


def test_unknown_task_lists_known_names():
    with pytest.raises(UnknownTaskError) as err:
        get_task("gsm9k")
    assert "gsm9k" in str(err.value) and "gsm8k" in str(err.value)


@pytest.mark.parametrize("domain", DOMAINS)
def test_known_tasks_filters_by_domain(domain):
    names = known_tasks(domain)
    assert names, f"no task for domain {domain}"
    assert all(get_task(n).domain == domain for n in names)


def test_register_twice_only_with_the_same_spec():
    spec = get_task("gsm8k")
    assert register_task(spec) is spec
    with pytest.raises(ValueError, match="already registered"):
        register_task(TaskSpec(**{**spec.__dict__, "split": "train"}))


def test_missing_local_file_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="RLVR_SHARED_DATA"):
        load_task_rows("aime24", data_dir=tmp_path)


def _generated(req, spec):
    return [{"question": f"q{req.seed}-{i}", "answer": str(i)} for i in range(req.limit or 3)]


def test_custom_reader_gets_seed_limit_and_split():
    from tasks.adapters.math import gsm8k  # noqa: F401  (module registers built-ins)

    def adapt(raw, ctx):
        return ctx.row([{"role": "user", "content": raw["question"]}], {"answer": raw["answer"]})

    register_task(
        TaskSpec(
            name="test_generated",
            domain="math",
            verifier="math",
            source="test generator",
            adapt=adapt,
            read=_generated,
        )
    )
    rows = load_task_rows("test_generated", limit=2, seed=7)
    assert [r["prompt"][0]["content"] for r in rows] == ["q7-0", "q7-1"]
    assert rows[0]["id"] == "test_generated/test:0"


def _fixture_rows() -> list[dict]:
    """One Hub-layout task per domain (agent rows carry a non-empty environment)."""
    blend = str(FIXTURES / "nemotron_blend.jsonl")
    names = ["nemotron_math", "nemotron_science", "nemotron_instruction", "nemotron_code"]
    rows = [r for n in names for r in load_task_rows(n, data_files=blend)]
    rows += load_task_rows("nemotron_agent", data_files=blend)
    rows += load_task_rows("xlam", data_files=str(FIXTURES / "xlam.jsonl"))
    return rows


def test_domains_concatenate_with_identical_features():
    from datasets import concatenate_datasets

    rows = _fixture_rows()
    per_domain = [to_dataset([r for r in rows if r["domain"] == d]) for d in DOMAINS]
    assert all(len(ds) for ds in per_domain)
    assert len({repr(ds.features) for ds in per_domain}) == 1
    mixed = concatenate_datasets(per_domain)
    assert mixed.column_names == list(COLUMNS)
    assert sorted(set(mixed["domain"])) == sorted(DOMAINS)
    agent = [r for r in mixed if r["domain"] == "agent" and r["environment"]]
    assert agent and json.loads(agent[0]["reference"])["environment"] == "workbench"


@needs_shared
def test_all_shared_files_mix_into_one_dataset():
    quality = QualityLog()
    rows = load_tasks(local_tasks(), quality=quality)
    dataset = to_dataset(rows)
    assert set(dataset["domain"]) >= {"code", "instruction", "math", "science"}
    assert len(set(dataset["id"])) == len(dataset), "ids must be unique across tasks"
    assert quality.total_dropped() == 0
    assert len(dataset) > 5000
