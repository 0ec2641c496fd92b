"""Data report: counts, length statistics, drops and train/eval overlap per domain."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import _requirements as required
import pytest

from rlvr.config import DomainConfig, MixtureConfig, PathsConfig, RunConfig
from rlvr.data_report import build_report, load_part, overlap
from tasks.registry import shared_data_dir

SHARED = shared_data_dir()
REPO = Path(__file__).resolve().parents[1]
needs_shared = required.needs_shared_data()


def run_with(domains: dict[str, DomainConfig], train: int = 30, held: int = 5) -> RunConfig:
    return RunConfig(
        domains=domains,
        mixture=MixtureConfig(train_size=train, heldout_size=held),
        paths=PathsConfig(data_dir=str(SHARED)),
    )


def micro(domain: str) -> DomainConfig:
    return DomainConfig(train_tasks=[f"micro_{domain}"], eval_tasks=[f"micro_{domain}"])


def domain_line(report: str, section: str, domain: str) -> list[str]:
    part = report.split(f"== {section}:")[1].split("\n\n")[0]
    (line,) = [ln for ln in part.splitlines() if ln.startswith(f"{domain} ")]
    return line.split()


def test_micro_domains_report_sizes_and_lengths():
    run = run_with({"math": micro("math"), "science": micro("science")}, train=30, held=5)
    report, complete = build_report(run)
    assert complete
    assert "== train: 60 rows ==" in report and "== eval: 10 rows ==" in report
    train = load_part(run, "train")
    for domain in ("math", "science"):
        cells = domain_line(report, "train", domain)
        assert int(cells[1]) == 30
        lengths = [len(r["prompt"][-1]["content"]) for r in train.rows if r["domain"] == domain]
        assert int(cells[2]) <= min(lengths) + 1 and int(cells[5]) >= max(lengths)
        assert int(domain_line(report, "eval", domain)[1]) == 5
    assert re.search(r"micro_math/heldout\s+5\s+5\s+0\s+0", report)
    assert report.rstrip().endswith("overlap (id or prompt): none")


def test_unknown_task_is_listed_and_marks_the_report_incomplete():
    run = run_with({"math": DomainConfig(train_tasks=["micro_math", "no_such_task"])})
    report, complete = build_report(run)
    assert not complete
    assert "unavailable  no_such_task:" in report
    assert int(domain_line(report, "train", "math")[1]) == 30  # the rest still reported


@needs_shared
def test_real_task_counts_and_overlap_when_train_and_eval_share_a_benchmark():
    code = DomainConfig(train_tasks=["humaneval"], eval_tasks=["humaneval", "mbpp"])
    run = run_with({"code": code}, train=10, held=1000)
    train, held = load_part(run, "train"), load_part(run, "eval")
    assert len(train.rows) == 10
    assert held.quality.counts("humaneval/test").kept == 164
    assert overlap(train, held) == {"code": 10}
    report, complete = build_report(run)
    assert complete and "overlap (id or prompt): code: 10" in report


def test_cli_prints_the_report_and_keeps_a_copy(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.data_report",
            "domains=[math,code]",
            "mixture.train_size=12",
            "mixture.heldout_size=3",
            f"paths.output_root={tmp_path}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "== train: 24 rows ==" in proc.stdout
    assert int(domain_line(proc.stdout, "eval", "code")[1]) == 3
    (saved,) = tmp_path.glob("*/*/data_report.txt")
    assert saved.read_text().strip() == proc.stdout.strip()


# -- the Nemotron blend through domains.<d>.data_files --

FIXTURES = REPO / "tests" / "fixtures"
BLEND = str(FIXTURES / "hub" / "nemotron_blend.jsonl")
WORKBENCH = FIXTURES / "workbench" / "csv_data"
SOURCES = {
    "BytedTsinghua-SIA/DAPO-Math-17k": [str(FIXTURES / "hub" / "dapo_math_17k.jsonl")],
    "Skywork/Skywork-OR1-RL-Data": [str(FIXTURES / "hub" / "skywork_or1_math.jsonl")],
}


def blend_run(tmp_path, resolve: bool = False) -> RunConfig:
    math = DomainConfig(train_tasks=["nemotron_math"], data_files=[BLEND])
    if resolve:
        math.resolve_files = SOURCES
    agent = DomainConfig(train_tasks=["nemotron_agent"], data_files={"nemotron_agent": [BLEND]})
    run = run_with({"math": math, "agent": agent})
    run.paths.cache_dir = str(tmp_path / "cache")
    return run


def test_blend_report_counts_rows_drops_by_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(WORKBENCH))
    report, complete = build_report(blend_run(tmp_path))
    assert complete, report
    assert int(domain_line(report, "train", "agent")[1]) == 7
    assert int(domain_line(report, "train", "math")[1]) == 2
    assert "dropped  nemotron_agent/train  1  tool slack_send_message is not emulated" in report
    assert "email_delete_email fails: error: Email not found." in report
    assert re.search(r"dropped  nemotron_math/train  2  unresolved _hf_placeholder: .*Skywork", report)
    assert "resolve_files={BytedTsinghua-SIA/DAPO-Math-17k" in report  # the fix is named


def test_resolved_placeholders_load_and_score(tmp_path, monkeypatch):
    import verifiers
    from tasks.schema import reference_of

    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(WORKBENCH))
    run = blend_run(tmp_path, resolve=True)
    train = load_part(run, "train")
    math = [r for r in train.rows if r["domain"] == "math"]
    assert sorted(reference_of(r)["answer"] for r in math) == ["42", "7", "81", "9"]
    dapo = next(r for r in math if r["id"].endswith(":m-4"))
    assert dapo["prompt"][-1]["content"].endswith(
        "36 have?\n\nRemember to put your answer on "
        'its own line after "Answer:".\n\nPut the final '
        "answer in \\boxed{}."
    )
    assert all(
        verifiers.verify(f"\\boxed{{{reference_of(r)['answer']}}}", reference_of(r), r["verifier"]).score == 1.0
        for r in math
    )
    dropped = train.quality.counts("nemotron_math/train").dropped
    assert dropped == {
        "unresolved _hf_placeholder (row 12 is outside the 2 rows given for Skywork/Skywork-OR1-RL-Data)": 1
    }
    assert not train.unscorable


def test_missing_workbench_tables_drop_every_agent_row_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(tmp_path / "nowhere"))
    train = load_part(blend_run(tmp_path), "train")
    assert not [r for r in train.rows if r["domain"] == "agent"]
    (reason,) = train.quality.counts("nemotron_agent/train").dropped.keys() - {
        "tool slack_send_message is not emulated by the workbench"
    }
    assert "workbench database not found" in reason and "RLVR_WORKBENCH_DATA" in reason


def test_unscorable_rows_are_reported(tmp_path, monkeypatch):
    """Rows that load but name no verifier or environment, or whose tables went missing."""
    from rlvr.data_report import unscorable_reason

    monkeypatch.setenv("RLVR_WORKBENCH_DATA", str(WORKBENCH))
    (row, *_) = load_part(blend_run(tmp_path), "train").rows
    assert row["domain"] == "agent" and unscorable_reason(row, {}) is None
    assert unscorable_reason({**row, "verifier": "agent"}, {}) == "unknown verifier 'agent'"
    assert unscorable_reason({**row, "environment": "kitchen"}, {}) == "unknown environment 'kitchen'"
    moved = row["reference"].replace(str(WORKBENCH.resolve()), str(tmp_path / "gone"))
    assert "workbench database incomplete" in unscorable_reason({**row, "reference": moved}, {})


@pytest.mark.parametrize(
    ("data_files", "resolve", "message"),
    [
        ({"nemotron_math": ["/no/such/blend.jsonl"]}, {}, "'/no/such/blend.jsonl' does not exist"),
        ({"math500": [BLEND]}, {}, "'math500' is not a task of domain 'math'"),
        (None, SOURCES, "needs the blend it resolves as local files"),
        ([BLEND], {"org/unknown": [BLEND]}, "unknown placeholder source"),
        ([BLEND], {"Skywork/Skywork-OR1-RL-Data": ["/no/sky.parquet"]}, "/no/sky.parquet"),
    ],
)
def test_bad_data_files_fail_the_config_check(data_files, resolve, message):
    from rlvr.config import ConfigError
    from rlvr.config.domain_files import check_domain_files

    math = DomainConfig(train_tasks=["nemotron_math"], eval_tasks=["gsm8k"])
    math.data_files, math.resolve_files = data_files, resolve
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_domain_files(run_with({"math": math}))


def test_a_list_of_files_needs_a_single_train_task():
    from rlvr.config import ConfigError
    from rlvr.config.domain_files import files_by_task

    one = DomainConfig(train_tasks=["nemotron_math"], data_files=[BLEND])
    assert files_by_task("math", one) == {"nemotron_math": (BLEND,)}
    two = DomainConfig(train_tasks=["nemotron_math", "micro_math"], data_files=[BLEND])
    with pytest.raises(ConfigError, match=r"name the task: domains.math.data_files=\{<task>"):
        files_by_task("math", two)


def test_cli_reads_data_files_and_fails_fast_on_a_missing_one(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "RLVR_WORKBENCH_DATA": str(WORKBENCH)}
    base = [
        sys.executable,
        "-m",
        "rlvr.data_report",
        "domains=[m2rl/agent]",
        "domains.agent.eval_tasks=[]",
        f"hydra.run.dir={tmp_path}",
    ]
    ok = subprocess.run(
        [*base, f"domains.agent.data_files=[{BLEND}]"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert re.search(r"nemotron_agent/train\s+9\s+7\s+2\s+0", ok.stdout)
    bad = subprocess.run(
        [*base, "domains.agent.data_files=[/no/agent.jsonl]"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "'/no/agent.jsonl' does not exist" in bad.stdout + bad.stderr
