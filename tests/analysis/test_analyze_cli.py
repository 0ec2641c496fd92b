"""``python -m rlvr.analyze`` on a study folder built from constructed models: every table and
figure written; bad settings refused; the study's analyze stage and the report's section."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.analysis.outputs import report_section
from rlvr.analyze import analyze
from rlvr.config import ConfigError, RunConfig

REPO = Path(__file__).resolve().parents[2]
LABELS = ["math-seed0", "code-seed0", "mixed-seed0", "ties-seed0"]  # the report's row order


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _run(study: Path) -> RunConfig:
    run = RunConfig()
    run.logger.name = "none"
    run.analyze.study_dir = str(study)
    run.analyze.analyses = ["footprint", "geometry"]  # the output analyses need evaluations
    return run


def test_every_table_and_figure_is_written(small_study):
    analyze(_run(small_study))
    folder = small_study / "analysis"
    for name in ("footprint", "footprint_jaccard", "geometry"):
        assert (folder / f"{name}.md").read_text().startswith("### "), name
    for figure in ("footprint.png", "geometry.png"):
        assert (folder / figure).read_bytes()[:4] == b"\x89PNG", figure
    shares = _rows(folder / "footprint.csv")
    assert [r["model"] for r in shares] == LABELS
    assert [r["role"] for r in shares] == ["expert", "expert", "mixed", "merge"]
    assert {"attention %", "mlp %", "embeddings %", "norms %"} <= set(shares[0])
    pairs = _rows(folder / "footprint_jaccard.csv")
    assert len(pairs) == 6 and len(_rows(folder / "geometry.csv")) == 6
    merge_pair = next(r for r in pairs if (r["model A"], r["model B"]) == tuple(LABELS[::3]))
    assert float(merge_pair["Jaccard"]) > float(merge_pair["random"])  # the merge keeps math's
    index = (folder / "analysis.md").read_text()
    assert "![footprint](footprint.png)" in index and "![geometry](geometry.png)" in index


@pytest.mark.slow  # a fresh interpreter with Hydra: tens of seconds on a loaded 2-core machine
def test_the_command_line_entry_point(small_study, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "rlvr.analyze",
        f"analyze.study_dir={small_study}",
        "logger=none",
        f"hydra.run.dir={tmp_path / 'hydra'}",
        "analyze.analyses=[geometry]",
    ]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(_rows(small_study / "analysis" / "geometry.csv")) == 6
    assert not (small_study / "analysis" / "footprint.csv").exists()
    bad = subprocess.run([*cmd[:-1], "analyze.analyses=[kl2]"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "known: footprint, geometry, consistency" in bad.stderr + bad.stdout


def test_named_models_and_bad_settings(small_study):
    run = _run(small_study)
    a = run.analyze
    a.analyses = ["geometry"]
    a.models = [f"m={small_study / 'experts' / 'math-seed0' / 'final'}"]
    a.out_dir = str(small_study / "only_geometry")
    (out,) = analyze(run)
    assert out.name == "geometry" and out.tables[0].rows == ()  # one model: no pair
    assert not (small_study / "only_geometry" / "footprint.md").exists()
    a.analyses = ["footprint", "kl2"]
    with pytest.raises(ConfigError, match=r"unknown \['kl2'\]; known: footprint, geometry, con"):
        analyze(run)
    a.analyses = ["footprint", "consistency"]  # no evaluations: refused before any weight
    with pytest.raises(ConfigError, match="drop consistency from analyze.analyses"):
        analyze(run)
    assert not (small_study / "only_geometry" / "footprint.md").exists()
    a.analyses, a.base = ["footprint"], str(small_study / "nowhere")
    with pytest.raises(ConfigError, match="no SFT model at"):
        analyze(run)


def test_the_report_includes_the_analyses_when_present(small_study):
    assert report_section(small_study) == []
    analyze(_run(small_study))
    heading, body = report_section(small_study)
    assert heading.startswith("## Analyses of the models")
    assert "![footprint](../analysis/footprint.png)" in body
    assert "#### Update footprint" in body  # one level under the report's own headings


def test_the_study_plans_an_analyze_stage_before_the_report(tmp_path):
    from omegaconf import OmegaConf

    from rlvr.study.commands import compose
    from rlvr.study.plan import build_plan

    argv = [
        "experiment=tiny_study",
        f"study.out_dir={tmp_path}",
        "study.domains=[math,code]",
        "study.merges=[ties]",
        "study.stages=[analyze]",
        "study.seeds=[0]",
        "run_name=study",
    ]
    stages = build_plan(OmegaConf.to_object(compose(argv)))  # type: ignore[arg-type]
    by_name = {s.name: s for s in stages}
    stage = by_name["analyze"]
    expected = {"sft", "expert-math-seed0", "expert-code-seed0", "mixed-seed0", "merge-ties-seed0"}
    evals = {f"eval-{m}" for m in ("base", "sft", "math-seed0", "code-seed0", "mixed-seed0", "ties-seed0")}
    assert set(stage.deps) == expected | evals  # the output analyses read the evaluations
    assert "analyze" in by_name["report"].deps
    names = [s.name for s in stages]
    assert names.index("analyze") > max(names.index(e) for e in evals)  # dependencies first
    assert "analyze.analyses=[footprint,geometry,consistency,kl,judge]" in stage.overrides
    assert stage.out_dir == tmp_path / "analysis"
    models = next(o for o in stage.overrides if o.startswith("analyze.models="))
    assert f"ties-seed0={tmp_path / 'merges' / 'ties-seed0'}" in models
    assert f"math-seed0={tmp_path / 'experts' / 'math-seed0' / 'final'}" in models
