"""The arms beyond the paper in a real study at reduced scale: the cascade trains its domains in
order, each stage from the last one's model, and resumes stage by stage; the adaptive arm logs
and saves its weights; RAM merges the real experts; the report tabulates every arm."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import yaml
from test_study_e2e import run_study

from rlvr.study.manifest import marker_path
from rlvr.study.profile import profile

pytestmark = pytest.mark.slow

ARMS = [
    "study.stages=[cascade,adaptive]",
    "study.cascade_order=[instruction,math]",
    "study.merges=[ram]",
]


def table(path):
    with path.open() as fh:
        return {row[next(iter(row))]: row for row in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("arms") / "study"
    run_study(out, *ARMS, "study.jobs=2")
    return out


def test_the_cascade_trains_each_domain_from_the_last_stage(study):
    first = study / "cascade" / "seed0" / "1-instruction"
    second = study / "cascade" / "seed0" / "2-math"
    config = yaml.safe_load((second / "config.yaml").read_text())
    assert config["init_from"] == str(first / "final")
    assert sorted(config["domains"]) == ["math"]
    assert sorted(yaml.safe_load((first / "config.yaml").read_text())["domains"]) == ["instruction"]
    cascade = table(study / "report" / "cascade_table.csv")
    assert list(cascade) == ["sft", "cascade@1-instruction", "cascade"]
    assert cascade["cascade"]["trained on"] == "math"


def test_every_arm_is_in_the_report_beside_mixed_and_the_best_merge(study):
    arms = table(study / "report" / "arms_table.csv")
    assert set(arms) == {"mixed", "ram", "cascade", "adaptive"}
    for name in ("ram", "cascade", "adaptive"):
        assert arms[name]["arm - mixed"] != ""
        assert float(arms[name]["/ separate experts"]) > 0
    # RAM merged the real experts' weights
    merge = json.loads((study / "merges" / "ram-seed0" / "merge.json").read_text())
    assert merge["mergekit_method"] == "ram" and len(merge["models"]) == 2


def test_the_adaptive_arm_logs_and_checkpoints_its_weights(study):
    run = study / "adaptive" / "seed0"
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    weights = [r for r in rows if "math/mixture_weight" in r]
    assert weights and all(
        r["math/mixture_weight"] + r["instruction/mixture_weight"] == pytest.approx(1.0) for r in weights
    )
    assert list((run / "checkpoints").glob("checkpoint-*/mixture_adaptive.json"))
    assert (study / "report" / "mixture_weights.png").is_file()


def test_a_cascade_stage_lost_midway_reruns_alone(study):
    """Only the lost stage reruns (resuming from its checkpoints); the first stage and the
    evaluations, whose inputs come back the same, are reused. (Last in this file: it reruns
    part of the shared study.)"""
    stage = "cascade-2-math-seed0"
    marker_path(study, stage).unlink()
    shutil.rmtree(study / "cascade" / "seed0" / "2-math" / "final")
    run_study(study, *ARMS, "study.jobs=2")
    stages = json.loads((study / "study.json").read_text())["stages"]
    rerun = {name for name, entry in stages.items() if entry["status"] == "done"}
    assert rerun == {stage}
    assert stages["cascade-1-instruction-seed0"]["status"] == "skipped"
    assert (study / "cascade" / "seed0" / "2-math" / "final" / "config.json").is_file()
    log = (study / "logs" / f"{stage}.log").read_text()
    assert "resuming from" in log and "checkpoint-" in log
    assert all(e["wall_s"] and e["device_s"] for e in stages.values())  # facts kept on reuse
    # the profile: stages the local launcher ran carry their CPU seconds
    evaluation = {p.name: p for p in profile(study)}["eval-ram-seed0"]
    assert 0 < evaluation.cpu_s and {"start-up", "sampling"} <= set(evaluation.parts)
