"""Mixture schedules: weights by step, and config checks that name the fix before any model loads."""

from __future__ import annotations

import pytest
from test_config import compose_run, hydra_context  # noqa: F401 (the Hydra context fixture)

from rlvr.config import ConfigError
from rlvr.config.checks import mixture_schedule
from rlvr.data.schedule import MixtureSchedule

TWO = "domains=[math,code]"


def points(*rows: tuple[int, str]) -> str:
    """``mixture.schedule.points=[...]`` from (step, "math:1,code:0") rows."""
    inner = ",".join(f"{{step:{s},weights:{{{w}}}}}" for s, w in rows)
    return f"mixture.schedule.points=[{inner}]"


def test_piecewise_holds_and_linear_interpolates_normalised_shares():
    rows = [(0, {"math": 3, "code": 1}), (10, {"math": 1, "code": 1})]
    piecewise = MixtureSchedule.from_points("piecewise", rows)
    linear = MixtureSchedule.from_points("linear", rows)
    assert piecewise.weights_at(0) == piecewise.weights_at(9) == {"code": 0.25, "math": 0.75}
    assert piecewise.weights_at(10) == piecewise.weights_at(10_000) == {"code": 0.5, "math": 0.5}
    assert linear.weights_at(5) == pytest.approx({"code": 0.375, "math": 0.625})
    assert linear.weights_at(10) == linear.weights_at(99) == {"code": 0.5, "math": 0.5}
    assert linear.peak_shares() == (0.5, 0.75)
    assert piecewise.describe() != linear.describe()


def test_a_scheduled_experiment_composes_into_a_schedule():
    run = compose_run("mixture=scheduled", TWO, points((0, "math:0.8,code:0.2"), (30, "math:0.2,code:0.8")))
    schedule = mixture_schedule(run)
    assert run.mixture.mode == "weighted" and schedule is not None
    assert (schedule.kind, schedule.steps) == ("piecewise", (0, 30))
    assert schedule.weights_at(29) == pytest.approx({"math": 0.8, "code": 0.2})
    assert schedule.weights_at(30) == pytest.approx({"math": 0.2, "code": 0.8})
    assert mixture_schedule(compose_run("mixture=weighted", TWO)) is None


def test_the_shipped_scheduled_experiment_has_a_schedule(tmp_path):
    run = compose_run("experiment=tiny_rl_scheduled", outputs=tmp_path)
    schedule = mixture_schedule(run)
    assert schedule is not None and set(schedule.domains) == set(run.domains)
    assert len(schedule.steps) >= 2 and schedule.steps[-1] < run.trainer.max_steps


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ([points((0, "math:1,chemistry:1"))], "unknown domain.*chemistry"),
        ([points((0, "math:1,code:1,science:1"))], "science.*which the run does not select"),
        ([points((0, "math:1"))], "leaves out code"),
        (
            [points((0, "math:1,code:1"), (20, "math:1,code:1"), (10, "math:1,code:0"))],
            "increasing",
        ),
        ([points((0, "math:1,code:1"), (0, "math:0,code:1"))], "increasing"),
        ([points((5, "math:1,code:1"))], "first point must be at step 0"),
        ([points((0, "math:-1,code:2"))], "negative"),
        ([points((0, "math:0,code:0"))], "summing to 0"),
        ([], "has no points"),
        (["mixture.schedule.kind=cosine"], "none, piecewise, linear"),
    ],
)
def test_bad_schedules_fail_the_config_check_naming_the_fix(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose_run("mixture=scheduled", TWO, *overrides)


def test_schedule_needs_weighted_mode_and_a_kind():
    with pytest.raises(ConfigError, match="needs mixture.mode=weighted"):
        compose_run(TWO, "mixture.schedule.kind=linear", points((0, "math:1,code:1")))
    with pytest.raises(ConfigError, match="kind=none ignores them"):
        compose_run("mixture=weighted", TWO, points((0, "math:1,code:1")))


def test_points_past_the_last_step_are_reported(caplog):
    with caplog.at_level("WARNING"):
        compose_run(
            "mixture=scheduled",
            TWO,
            "trainer.max_steps=10",
            points((0, "math:1,code:1"), (50, "math:1,code:0")),
        )
    assert "never reached" in caplog.text
