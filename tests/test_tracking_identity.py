"""Each stage's W&B identity: stable for the stage's life, grouped by its study folder."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

from rlvr.config import RunConfig
from rlvr.config.schemas import EvalConfig
from rlvr.tracking.identity import SweepPoint, folder_group, identity
from rlvr.tracking.wandb_run import _swept_values

STAGES = {
    "expert-math-seed0": {"kind": "expert"},
    "expert-math-seed1": {"kind": "expert"},
    "eval-sft": {"kind": "eval"},
}


def _study(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "study.json").write_text(json.dumps({"plan": [], "stages": STAGES}))
    return root


def _stage(name: str, seed: int = 0) -> RunConfig:
    run = RunConfig(run_name=name)
    run.trainer.seed = seed
    return run


def test_two_seeds_of_a_study_share_its_group_with_distinct_names_and_ids(tmp_path):
    study = _study(tmp_path / "a" / "tiny_study")
    one = identity(_stage("expert-math-seed0"), study / "experts" / "math-seed0", "rl")
    two = identity(_stage("expert-math-seed1", 1), study / "experts" / "math-seed1", "rl")
    assert one.group == two.group == folder_group(study)
    assert (one.name, two.name) == ("expert-math-seed0", "expert-math-seed1")
    assert one.id != two.id and one.job_type == two.job_type == "expert"
    assert "seed:1" in two.tags


def test_a_stage_keeps_its_id_across_restarts_and_two_study_folders_never_mix(tmp_path):
    a = _study(tmp_path / "a" / "tiny_study")
    b = _study(tmp_path / "b" / "tiny_study")  # the same experiment, another folder
    first = identity(_stage("expert-math-seed0"), a / "experts" / "math-seed0", "rl")
    again = identity(_stage("expert-math-seed0"), a / "experts" / "math-seed0", "rl")
    other = identity(_stage("expert-math-seed0"), b / "experts" / "math-seed0", "rl")
    assert first == again
    assert other.group != first.group and other.id != first.id


def test_an_evaluation_stage_finds_its_study_through_its_output_folder(tmp_path):
    study = _study(tmp_path / "s")
    run = _stage("eval-sft")
    run.eval = EvalConfig(out_dir=str(study))
    ident = identity(run, tmp_path / "outputs" / "x" / "eval-sft", "evaluate")
    assert (ident.group, ident.job_type) == (folder_group(study), "eval")


def test_outside_a_study_the_run_folder_names_the_run_and_a_sweep_groups_its_points(tmp_path):
    run = _stage("default")
    alone = identity(run, tmp_path / "demo" / "lr=1e-5", "rl")
    assert (alone.name, alone.group, alone.job_type) == ("lr=1e-5", run.experiment, "rl")
    sweep = tmp_path / "multirun"
    points = [identity(run, sweep / p, "rl", SweepPoint(sweep)) for p in ("lr=1e-5", "lr=3e-5")]
    assert points[0].group == points[1].group == folder_group(sweep)
    assert points[0].id != points[1].id
    assert [p.name for p in points] == ["lr=1e-5", "lr=3e-5"]  # no swept values known: folders
    named = identity(run, sweep / "long-digest", "rl", SweepPoint(sweep, "trainer.seed=1"))
    assert named.name == "trainer.seed=1"


def test_a_sweep_point_is_named_by_the_values_its_sweep_varies(tmp_path):
    record = {"hydra": {"overrides": {"task": ["experiment=demo", "seed=0,1", "lr=range(1,3)"]}}}
    (tmp_path / "multirun.yaml").write_text(OmegaConf.to_yaml(record))
    point = ["experiment=demo", "seed=1", "lr=2"]
    assert _swept_values(tmp_path, point) == "seed=1,lr=2"
    assert _swept_values(tmp_path / "absent", point) == ""  # no record: named by the folder
