"""Stage configs composed once per group choice equal Hydra's full composition, error for error."""

from __future__ import annotations

import pytest
from hydra.errors import HydraException
from omegaconf import OmegaConf

from rlvr.study.commands import stage_overrides, user_overrides
from rlvr.study.composition import _hydra_compose, compose, names_group
from rlvr.study.plan import build_plan

STUDIES = (
    "tiny_study",
    "m2rl_study",
    "tiny_study_arms",
    "m2rl_study_arms",
    "real_smoke_study",
    "real_study",
)


def hydra_full(overrides: list[str]) -> dict:
    plain = tuple(o for o in overrides if not o.startswith("hydra."))
    return OmegaConf.to_container(_hydra_compose("train", plain))


@pytest.mark.parametrize("experiment", STUDIES)
def test_every_kind_of_stage_composes_as_hydra_composes_it(experiment):
    from rlvr.study.__main__ import load_study

    argv = [f"experiment={experiment}", "trainer.seed=3", "algo.learning_rate=1e-5"]
    stages = build_plan(load_study(argv))
    one_per_kind = {s.kind: s for s in stages}  # the last stage of each kind
    assert len(one_per_kind) >= 4
    for stage in one_per_kind.values():
        overrides = stage_overrides(user_overrides(argv), stage)
        assert OmegaConf.to_container(compose(overrides)) == hydra_full(overrides), stage.name


@pytest.mark.parametrize(
    "overrides",
    [
        ["experiment=tiny_study", "domains=[math]", "++algo.new_knob=3", "trainer.seed=2"],
        ["experiment=tiny_study", "~mixture.difficulty.math", "merge=ties", "merge.name=ties"],
        ["domains=[code,agent]", "+extra={a: 1, b: [1, 2]}", "run_name='a b'", "model=tiny"],
        ["experiment=tiny_study", "eval.k=${algo.num_generations}", "domains=[science]"],
    ],
)
def test_value_overrides_apply_as_in_hydra(overrides):
    assert OmegaConf.to_container(compose(overrides)) == hydra_full(overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        ["experiment=tiny_study", "trainer.no_such_key=1"],  # names the + fix
        ["experiment=tiny_study", "+trainer.seed=1"],  # appending over an existing key
        ["domains=[no_such_domain]"],
        ["experiment=no_such_experiment"],
        ["trainer.seed=[1,2"],  # unparseable
        ["experiment=tiny_study", "~eval.max_prompts"],  # a schema's field cannot go
    ],
)
def test_bad_overrides_fail_as_hydra_fails_them(overrides):
    with pytest.raises(HydraException) as ours:
        compose(overrides)
    with pytest.raises(HydraException) as hydras:
        hydra_full(overrides)
    assert type(ours.value) is type(hydras.value)
    assert str(ours.value) == str(hydras.value)


@pytest.mark.parametrize(
    ("override", "group"),
    [
        ("experiment=tiny_study", True),
        ("+experiment=tiny_study", True),
        ("domains=[math,code]", True),
        ("~merge", True),
        ("merge@x=ties", True),
        ("merge.name=ties", False),
        ("trainer.seed=1", False),
        ("run_name=merge", False),
        ("=x", False),
    ],
)
def test_group_choices_are_told_from_values(override, group):
    assert names_group(override) is group
