"""``python -m rlvr.filter``: the pass-rate band, its files and counts, loading the kept rows back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig, validate
from rlvr.config.checks import check_filter
from rlvr.config.filter import FilterConfig
from rlvr.filtering.passrate import ABOVE, BELOW, KEPT, PassBand

REPO = Path(__file__).resolve().parents[1]

# (pass rate, band, outcome): open ends by default, closed when included
BANDS = [
    (0.0, PassBand(), BELOW),
    (0.125, PassBand(), KEPT),
    (0.875, PassBand(), KEPT),
    (1.0, PassBand(), ABOVE),
    (0.0, PassBand(include_low=True), KEPT),
    (1.0, PassBand(include_high=True), KEPT),
    (0.25, PassBand(0.25, 0.75), BELOW),
    (0.25, PassBand(0.25, 0.75, include_low=True), KEPT),
    (0.75, PassBand(0.25, 0.75), ABOVE),
    (0.5, PassBand(0.5, 0.5, True, True), KEPT),
    (0.9, PassBand(0.25, 0.75, True, True), ABOVE),
]


@pytest.mark.parametrize(("p", "band", "outcome"), BANDS)
def test_the_band_keeps_pass_rates_between_its_ends(p, band, outcome):
    assert band.outcome(p) == outcome


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"k": 0}, "filter.k=0"),
        ({"low": 0.8, "high": 0.2}, "need 0 <= low <= high <= 1"),
        ({"high": 1.5}, "need 0 <= low <= high <= 1"),
        ({"low": 0.5, "high": 0.5}, "set filter.include_low=true filter.include_high=true"),
        ({"temperature": 0.0}, "filter.temperature must be > 0"),
        ({"max_new_tokens": 0}, "filter.max_new_tokens must be >= 1"),
    ],
)
def test_bad_filter_settings_fail_naming_the_key(change, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        check_filter(FilterConfig(**change))


def test_filter_settings_are_a_group_of_the_run_config():
    group = yaml.safe_load((REPO / "conf" / "filter" / "default.yaml").read_text())
    assert group == {k: v for k, v in vars(FilterConfig()).items()}  # the file holds every key
    run = compose("experiment=tiny_study", "filter.k=3", "filter.include_high=true")
    assert (run.filter.k, run.filter.include_high, run.filter.low) == (3, True, 0.0)
    with pytest.raises(ConfigError, match="filter.k=0"):  # checked with the rest of the config
        compose("filter.k=0")


def test_the_filter_writes_beside_training_runs_by_default():
    from rlvr.filter import default_out_dir

    run = compose("experiment=smoke", "paths.output_root=/o")
    assert default_out_dir(run) == Path("/o/smoke/filter/test")


def compose(*overrides: str) -> RunConfig:
    from rlvr.study.commands import compose as compose_config

    cfg = compose_config([*overrides, "run_name=test"])
    run: RunConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    validate(run)
    return run


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_outputs(out: Path, domain: str, rows: int, k: int) -> dict:
    """The files agree with each other: kept rows, per-row outcomes, histogram and counts."""
    counts = json.loads((out / "counts.json").read_text())
    c = counts["domains"][domain]
    kept = read_jsonl(out / f"{domain}.jsonl")
    per_row = read_jsonl(out / "pass_rates.jsonl")
    assert c["rows"] == rows == len(per_row) and counts["k"] == k
    assert c["kept"] + c["below"] + c["above"] + c["errored"] == rows
    assert c["kept"] == len(kept) == sum(r["outcome"] == KEPT for r in per_row)
    assert [r["id"] for r in kept] == [r["id"] for r in per_row if r["outcome"] == KEPT]
    assert sum(c["histogram"].values()) == rows - c["errored"]
    for j, n in c["histogram"].items():
        assert n == sum(r["correct"] == int(j) and r["errors"] == 0 for r in per_row)
    assert (out / "pass_rates.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert counts["total"]["kept"] == c["kept"] and counts["samples"] == rows * k
    return counts


def test_filter_writes_the_band_and_its_rows_load_back(tmp_path, rlvr_cache):
    from rlvr.data.rows import build_domain_data
    from rlvr.filter import filter_rows

    run = compose(
        "domains=[math]",
        "mixture.train_size=6",
        "+mixture.difficulty.math=1",
        "filter.k=2",
        "filter.include_low=true",
        "algo.max_completion_length=4",
        "logger=none",
        "trainer.verifier_workers=1",
        f"filter.out_dir={tmp_path / 'filter'}",
    )
    out = tmp_path / "filter"
    filter_rows(run, tmp_path / "hydra")
    counts = check_outputs(out, "math", rows=6, k=2)
    kept_ids = [r["id"] for r in read_jsonl(out / "math.jsonl")]
    assert counts["band"]["text"] == "0 <= p < 1" and kept_ids  # the untrained model: p = 0
    again = compose(
        "domains=[math]",
        "domains.math.train_tasks=[rows_math]",
        f"domains.math.data_files=[{out / 'math.jsonl'}]",
        "mixture.heldout_size=2",
    )
    data = build_domain_data(again)["math"]
    assert [r["id"] for r in data.train] == kept_ids
    assert {r["verifier"] for r in data.train} == {"math"}  # each row keeps its own verifier


def test_canonical_rows_of_another_domain_or_without_files_do_not_load(tmp_path):
    from tasks.quality import QualityLog
    from tasks.registry import load_task_rows

    with pytest.raises(FileNotFoundError, match="domains.math.data_files"):
        load_task_rows("rows_math")
    file = tmp_path / "rows.jsonl"
    from tasks import micro

    rows = micro.generate("math", 2, 0, 1) + micro.generate("science", 1, 0, 1)
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    quality = QualityLog()
    loaded = load_task_rows("rows_math", data_files=[str(file)], quality=quality)
    assert [r["id"] for r in loaded] == [r["id"] for r in rows[:2]]
    assert quality.total_dropped("rows_math/train") == 1


def test_the_filter_is_a_study_stage_after_sft_and_the_grpo_arms_train_on_its_rows(tmp_path):
    from rlvr.study.__main__ import plan

    args = ["experiment=tiny_study", f"study.out_dir={tmp_path}", "study.stages=[filter]"]
    args += ["study.domains=[math,code]", "study.merges=[]"]
    p = plan(args)
    stages, hashes, commands = p.stages, p.hashes, p.commands
    by_name = {s.name: s for s in stages}
    stage = by_name["filter"]
    assert stage.deps == ("sft",) and stage.entry == "rlvr.filter"
    out = tmp_path / "filter"
    assert stage.outputs == (out / "counts.json", out / "pass_rates.png", out / "math.jsonl", out / "code.jsonl")
    assert f'init_from="{tmp_path}/sft/final"' in commands["filter"]
    assert f'filter.out_dir="{out}"' in commands["filter"]
    assert [s.name for s in stages].index("filter") < [s.name for s in stages].index("expert-math-seed0")
    for arm in ("expert-math-seed0", "expert-code-seed0", "mixed-seed0"):
        assert by_name[arm].deps == ("sft", "filter")
    math_rows = [
        "domains.math.train_tasks=[rows_math]",
        f'domains.math.data_files=["{out}/math.jsonl"]',
    ]
    assert set(math_rows) <= set(by_name["mixed-seed0"].overrides)
    assert set(math_rows) <= set(by_name["expert-math-seed0"].overrides)
    assert not any("domains.math" in o for o in by_name["expert-code-seed0"].overrides)
    assert not any("rows_" in o for o in by_name["eval-sft"].overrides)  # same benchmarks
    assert "filter" in by_name["report"].deps
    other = plan([*args, "mixture.train_size=10"]).hashes
    assert other["filter"] != hashes["filter"]  # the rows it reads changed
    same = plan([*args, "eval.k=2", "algo.learning_rate=1e-3"]).hashes
    assert same["filter"] == hashes["filter"]  # settings neither it nor the SFT reads
    band = plan([*args, "filter.include_high=true"]).hashes  # on the study's command line
    assert band["sft"] == hashes["sft"] and band["eval-sft"] == hashes["eval-sft"]
    for changed in ("filter", "expert-math-seed0", "mixed-seed0", "eval-mixed-seed0"):
        assert band[changed] != hashes[changed]  # new rows retrain the arms


@pytest.mark.slow
def test_the_filter_command_bands_an_sft_models_pass_rates(tmp_path, rlvr_cache, sft_checkpoint):
    out = tmp_path / "filter"
    cmd = [
        sys.executable,
        "-m",
        "rlvr.filter",
        "experiment=smoke",
        "logger=none",
        f"init_from={sft_checkpoint}",
        "mixture.train_size=24",
        "filter.k=4",
        "trainer.verifier_workers=1",
        f"filter.out_dir={out}",
        f"hydra.run.dir={out}",
    ]
    env = dict(os.environ, RLVR_CACHE=str(rlvr_cache))
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = check_outputs(out, "math", rows=24, k=4)
    c = counts["domains"]["math"]
    assert c["kept"] > 0 and c["below"] + c["above"] > 0  # partial skill: a real spread
    assert "| math | 24 |" in result.stdout + result.stderr  # the counts table in the log
