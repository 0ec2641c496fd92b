"""The policy neighbourhood: pair merges planned as a study stage, and the asymmetric table read
back from constructed evaluations whose differences are known."""

from __future__ import annotations

import pytest
from conftest import write_eval
from omegaconf import OmegaConf

from rlvr.analysis.evaluations import load
from rlvr.analysis.neighbourhood import Neighbourhood
from rlvr.config import ConfigError
from rlvr.study.commands import compose
from rlvr.study.plan import build_plan


@pytest.fixture
def study(tmp_path):
    scores = {  # label -> (math item scores, code item scores)
        "sft": ([0, 1, 0, 0], [1, 1, 0, 0]),
        "math-seed0": ([1, 1, 1, 0], [1, 1, 0, 0]),
        "code-seed0": ([1, 1, 0, 0], [1, 1, 1, 1]),
    }
    for label, (m, c) in scores.items():
        write_eval(tmp_path, label, "micro_math", {"x": m})
        write_eval(tmp_path, label, "micro_code", {"y": c})
    pair = tmp_path / "neighbourhood"
    write_eval(pair, "math+code-seed0", "micro_math", {"x": [1, 1, 1, 1]})
    write_eval(pair, "math+code-seed0", "micro_code", {"y": [1, 1, 1, 0]})
    return tmp_path


def test_each_direction_is_scored_on_its_own_domain(study):
    analysis = Neighbourhood(load(study, "neighbourhood"), study, "avg_at_k")
    rows = {(r[0], r[1]): r for r in analysis.rows()}
    # A, B, seed, SFT, expert A, expert B, merge(A, B), merge - expert A, merge - SFT
    assert rows[("math", "code")][2:] == (0, 25.0, 75.0, 50.0, 100.0, 25.0, 75.0)
    assert rows[("code", "math")][2:] == (0, 50.0, 100.0, 50.0, 75.0, -25.0, 25.0)
    out = analysis.write(study / "analysis")
    domains, values = analysis.matrix(list(out.tables[0].rows))
    assert domains == ["math", "code"]
    assert values.tolist() == [[0.0, 25.0], [-25.0, 0.0]]  # asymmetric
    assert out.images[0].read_bytes()[:4] == b"\x89PNG"


def test_without_the_pair_evaluations_it_names_the_stage(study, tmp_path):
    import shutil

    shutil.rmtree(study / "neighbourhood")
    with pytest.raises(ConfigError, match=r"study.stages=\[neighbourhood,analyze\]"):
        Neighbourhood(load(study, "neighbourhood"), study, "avg_at_k")


def _plan(tmp_path, *extra):
    argv = [
        "experiment=tiny_study",
        f"study.out_dir={tmp_path}",
        "study.domains=[math,code,science]",
        "study.merges=[]",
        "study.seeds=[0]",
        "study.stages=[neighbourhood,analyze]",
        "run_name=study",
        *extra,
    ]
    return {s.name: s for s in build_plan(OmegaConf.to_object(compose(argv)))}


def test_the_stage_merges_every_pair_with_the_configured_preset(tmp_path):
    stages = _plan(tmp_path, "analyze.neighbourhood.preset=average")
    pairs = ["math+code-seed0", "math+science-seed0", "code+science-seed0"]
    assert {n for n in stages if n.startswith("merge-")} == {f"merge-{p}" for p in pairs}
    merge = stages["merge-code+science-seed0"]
    assert "merge=average" in merge.overrides
    assert set(merge.deps) == {"expert-code-seed0", "expert-science-seed0"}
    evaluation = stages["eval-code+science-seed0"]
    assert evaluation.deps == ("merge-code+science-seed0",)
    assert {p.name for p in evaluation.outputs} == {"micro_code.json", "micro_science.json"}
    assert f'eval.out_dir="{tmp_path / "neighbourhood"}"' in evaluation.overrides
    assert {f"eval-{p}" for p in pairs} <= set(stages["analyze"].deps)
    assert {f"{k}-{p}" for p in pairs for k in ("merge", "eval")} <= set(stages["report"].deps)
    models = next(o for o in stages["analyze"].overrides if o.startswith("analyze.models="))
    assert "+" not in models  # the pair merges are not the study's models


def test_a_bad_preset_or_a_plan_without_the_stage(tmp_path):
    with pytest.raises(ConfigError, match="analyze.neighbourhood.preset: unknown merge method"):
        _plan(tmp_path, "analyze.neighbourhood.preset=tie")
    stages = _plan(tmp_path / "b", "study.stages=[analyze]")
    assert not any("+" in n for n in stages)
    analyses = next(o for o in stages["analyze"].overrides if o.startswith("analyze.analyses="))
    assert "neighbourhood" not in analyses  # left out: nothing would make its inputs
