"""No silent empty domain: the study's plan counts each planned domain's training rows and stops
on an empty one, naming the setting to supply; a GRPO stage refuses to start on one."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig, validate
from rlvr.data.row_counts import count_task
from rlvr.study.__main__ import run_study
from rlvr.study.commands import compose
from tests.support.m2rl_data import m2rl_local_data


def composed(*overrides: str) -> RunConfig:
    cfg = compose(["run_name=test", *overrides])
    run: RunConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    validate(run, check_paths=False)
    return run


@pytest.fixture
def no_workbench(monkeypatch, tmp_path):
    """NeMo Gym's workbench tables are absent (as on any machine that has not copied them)."""
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(tmp_path / "no-csv-data"))


def rows_section(printed: str) -> str:
    """The dry run's rows-per-domain table (other sections name domains too)."""
    return printed.split("training rows per domain", 1)[1]


def test_m2rl_dry_run_without_local_math_and_agent_data_fails_naming_them(tmp_path, capsys, no_workbench):
    argv = ["experiment=m2rl_study", "study.dry_run=true", f"study.out_dir={tmp_path}"]
    with pytest.raises(ConfigError) as err:
        run_study(argv)
    message = str(err.value)
    assert "domain math" in message and "domain agent" in message
    assert "domains.math.data_files" in message and "++domains.math.resolve_files" in message
    assert "RLVR_WORKBENCH_DATA" in message  # agent: where NeMo Gym's tables go
    for domain in ("code", "science", "instruction"):
        assert f"domain {domain}" not in message  # on the Hub: not counted, not failed
    table = rows_section(capsys.readouterr().out)
    math_line = next(line for line in table.splitlines() if line.strip().startswith("math "))
    assert " 0 " in math_line and "EMPTY" in math_line
    code_line = next(line for line in table.splitlines() if line.strip().startswith("code "))
    assert "on the Hub: nvidia/Nemotron-3-Nano-RL-Training-Blend, not counted" in code_line


def test_m2rl_dry_run_with_local_rows_passes_and_prints_their_count(tmp_path, capsys, monkeypatch):
    data = m2rl_local_data(tmp_path / "data", monkeypatch, math_rows=3)  # rows_math: study-wide
    argv = ["experiment=m2rl_study", "study.dry_run=true", f"study.out_dir={tmp_path}", *data]
    assert run_study(argv) == 0
    table = rows_section(capsys.readouterr().out)
    math_line = next(line for line in table.splitlines() if line.strip().startswith("math "))
    assert math_line.split()[1] == "3" and "rows_math: 1 local file(s)" in math_line
    agent_line = next(line for line in table.splitlines() if line.strip().startswith("agent "))
    assert "not counted" in agent_line


def test_tiny_study_dry_run_counts_all_five_domains(tmp_path, capsys):
    argv = ["experiment=tiny_study", "study.dry_run=true", f"study.out_dir={tmp_path}"]
    assert run_study(argv) == 0
    out = capsys.readouterr().out
    table = out[out.index("training rows per domain") :].splitlines()[1:6]
    assert sorted(line.split()[0] for line in table) == sorted(["math", "code", "science", "instruction", "agent"])
    assert all(line.split()[1] == "2,000" and "generated" in line for line in table)


def blend_record(dataset: str, **fields) -> dict:
    return {"dataset": f"nano_v3_sft_profiled_{dataset}", "uuid": dataset, **fields}


def test_local_blend_math_counts_placeholders_only_once_resolved(tmp_path):
    """The blend's math rows are placeholders: read locally without their source, every row
    drops and the fix names resolve_files; with the source given, the row counts."""
    blend = tmp_path / "blend.jsonl"
    placeholder = {"row": 0, "question_template": {"prefix": "Solve: ", "suffix": ""}}
    records = [
        blend_record("dapo17k", _hf_placeholder=placeholder),
        blend_record("stem_mcqa", expected_answer="A"),  # another domain's row: not math
    ]
    blend.write_text("".join(json.dumps(r) + "\n" for r in records))
    dapo = tmp_path / "dapo.jsonl"
    source = {"prompt": [{"content": "1 + 1?"}], "reward_model": {"ground_truth": "2"}}
    dapo.write_text(json.dumps(source) + "\n")
    common = [
        "domains=[m2rl/math]",
        f"domains.math.data_files=[{blend}]",
        f"paths.cache_dir={tmp_path / 'cache'}",
    ]
    unresolved = count_task(composed(*common), "math", "nemotron_math")
    assert unresolved.rows == 0 and "resolve_files" in unresolved.fix
    resolve = f"++domains.math.resolve_files={{BytedTsinghua-SIA/DAPO-Math-17k: [{dapo}]}}"
    resolved = count_task(composed(*common, resolve), "math", "nemotron_math")
    assert resolved.rows == 1 and resolved.where == "1 local file(s)"


def test_a_missing_file_outside_the_study_is_empty_and_one_a_stage_writes_is_pending(tmp_path):
    later = tmp_path / "study" / "filter" / "math.jsonl"
    run = composed(
        "domains=[math]",
        "domains.math.train_tasks=[rows_math]",
        f"domains.math.data_files=[{later}]",
    )
    pending = count_task(run, "math", "rows_math", pending=[tmp_path / "study"])
    assert pending.rows is None and "earlier stage" in pending.where
    missing = count_task(run, "math", "rows_math", pending=[tmp_path / "elsewhere"])
    assert missing.rows == 0 and "does not exist" in missing.fix


def test_grpo_stage_with_an_empty_domain_stops_before_any_model(tmp_path):
    from rlvr.train import train

    empty = tmp_path / "math.jsonl"
    empty.write_text("")
    cache = tmp_path / "cache"
    run = composed(
        "experiment=smoke",
        "logger=none",
        "domains=[math,code]",
        "domains.math.train_tasks=[rows_math]",
        f"domains.math.data_files=[{empty}]",
        "mixture.train_size=4",
        "mixture.heldout_size=0",
        f"paths.cache_dir={cache}",
    )
    with pytest.raises(ConfigError, match=r"no training rows for domain math \(") as err:
        train(run, tmp_path / "run")
    assert "domains.math.data_files" in str(err.value) and "domain code" not in str(err.value)
    assert not (cache / "models").exists(), "a model was built before the refusal"
