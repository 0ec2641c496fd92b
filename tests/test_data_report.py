"""Data report: counts, length statistics, drops and train/eval overlap per domain."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import _requirements as required

from rlvr.config import DomainConfig, MixtureConfig, PathsConfig, RunConfig
from rlvr.data_report import build_report, load_part, overlap
from tasks.registry import shared_data_dir

SHARED = shared_data_dir()
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
