"""Skill consistency on constructed evaluations: a merge whose per-sample records copy one
expert's inherits every newly solved item; a model that solves what no expert solves is all new."""

from __future__ import annotations

import csv

import pytest
from conftest import write_eval

from rlvr.analysis.consistency import SkillConsistency, cosine, inherited_gain
from rlvr.analysis.evaluations import load
from rlvr.config import ConfigError

ITEMS = ("a", "b", "c", "d", "e", "f")
SFT = {
    "a": [0, 0, 0, 0],
    "b": [0, 0, 0, 0],
    "c": [0, 0, 0, 0],
    "d": [1, 1, 0, 0],
    "e": [0, 0, 0, 0],
    "f": [1, 1, 1, 1],
}
MATH = {**SFT, "a": [1, 1, 1, 0], "b": [1, 1, 0, 0], "c": [1, 0, 0, 0]}
CODE = {**SFT, "e": [1, 1, 1, 1]}
MIXED = {**SFT, "c": [1, 1, 1, 1], "d": [1, 1, 1, 1], "f": [0, 0, 0, 0]}


@pytest.fixture
def study(tmp_path):
    for label, items in [
        ("sft", SFT),
        ("math-seed0", MATH),
        ("code-seed0", CODE),
        ("ties-seed0", MATH),
        ("mixed-seed0", MIXED),
    ]:
        write_eval(tmp_path, label, "micro_math", items)
    return tmp_path


def _rows(analysis: SkillConsistency) -> dict[str, tuple]:
    return {r[0]: r for r in analysis.result.rows()}


def test_a_copy_of_one_experts_gains_is_fully_inherited(study):
    rows = _rows(SkillConsistency(load(study, "consistency"), 0.5))
    # model, role, newly solved, inherited, new, inherited %, new %, gain inherited %
    assert rows["math-seed0"][1:3] == ("expert", 2)  # a (0.75) and b (0.5); c (0.25) is not
    assert rows["ties-seed0"][2:] == (2, 2, 0, 100.0, 0.0, 100.0)


def test_what_no_expert_solves_is_new(study):
    rows = _rows(SkillConsistency(load(study, "consistency"), 0.5))
    # c: 0 -> 1 (math only reaches 0.25 there), d: 0.5 is solved by SFT already
    assert rows["mixed-seed0"][2:7] == (1, 0, 1, 0.0, 100.0)
    # of its positive gains (c +1, d +0.5), math also gains 0.25 on c: 0.25 / 1.5
    assert rows["mixed-seed0"][7] == pytest.approx(100 * 0.25 / 1.5)


def test_a_stricter_threshold_changes_what_counts_as_solved(study):
    rows = _rows(SkillConsistency(load(study, "consistency"), 0.75))
    assert rows["math-seed0"][2] == 1  # only a reaches 0.75
    assert rows["mixed-seed0"][2:5] == (2, 0, 2)  # c and d, both new


def test_tables_gains_and_figure_are_written(study):
    out = SkillConsistency(load(study, "consistency"), 0.5).write(study / "analysis")
    summary, cosines = out.tables
    labels = ["math-seed0", "code-seed0", "ties-seed0", "mixed-seed0"]  # the report's row order
    assert [r[0] for r in summary.rows] == labels
    pairs = {(r[0], r[1]): r[2] for r in cosines.rows}
    assert pairs[("ties-seed0", "math-seed0")] == pytest.approx(1.0)
    assert pairs[("ties-seed0", "code-seed0")] == pytest.approx(0.0)  # disjoint items
    with (study / "analysis" / "consistency_gains.csv").open() as fh:
        gains = {r["id"]: r for r in csv.DictReader(fh)}
    assert set(gains) == set(ITEMS)
    assert float(gains["c"]["mixed-seed0 gain"]) == 1.0
    assert float(gains["f"]["mixed-seed0 gain"]) == -1.0
    assert out.images[0].read_bytes()[:4] == b"\x89PNG"


def test_continuous_measures_on_known_vectors():
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) is None
    assert inherited_gain([0.5, 0.5], [[0.5, 0.0], [0.0, 0.25]]) == pytest.approx(0.75)
    assert inherited_gain([-0.5, 0.0], [[1.0, 1.0]]) is None  # no gain to inherit


def test_no_evaluation_of_the_sft_model_names_the_fix(tmp_path):
    write_eval(tmp_path, "math-seed0", "micro_math", MATH)
    with pytest.raises(ConfigError, match="run the study's eval stages"):
        load(tmp_path, "consistency")
