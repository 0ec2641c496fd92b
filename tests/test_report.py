"""End to end on tiny checkpoints: fake runs -> merge -> evaluate -> report tables and plots."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_merge import one_torch_thread, perturbed_copy, tiny_family  # noqa: F401  (autouse fixture)

from rlvr.config import ConfigError, EvalConfig, LoggerConfig, RunConfig
from rlvr.evaluation.evaluator import evaluate
from rlvr.merge import merge_models
from rlvr.report import build_report
from rlvr.runs.accounting import sum_compute

TASKS = ["micro_math", "micro_instruction"]
COST = {"math": 30.0, "instruction": 50.0, "mixed": 45.0}


def fake_run(root: Path, name: str, domains: list[str], base: Path, seed: int) -> Path:
    """A training run folder in our own format: final/, summary.json, metrics.jsonl."""
    run = root / name
    run.mkdir(parents=True)
    perturbed_copy(base, run / "final", seed=seed)
    compute = {"device_seconds": COST[name], "wall_s": COST[name], "processes": 1}
    summary = {"domains": domains, "compute": compute, "rl": {"seconds": COST[name] / 2}}
    (run / "summary.json").write_text(json.dumps(summary))
    with (run / "metrics.jsonl").open("w") as fh:
        for step in range(1, 6):
            rec = {"step": step, **{f"rewards/reward_{d}/mean": 0.1 * step for d in domains}}
            fh.write(json.dumps(rec) + "\n")
    return run


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("study")
    base, _ = tiny_family(root, 0)
    runs = {
        "math": fake_run(root, "math", ["math"], base, 1),
        "instruction": fake_run(root, "instruction", ["instruction"], base, 2),
        "mixed": fake_run(root, "mixed", ["math", "instruction"], base, 3),
    }
    experts = [runs["math"], runs["instruction"]]
    for preset in ("average", "ties"):
        merge_models(preset, base, experts, None, root / "merges" / preset, seed=0)
    models = [f"sft={base}", *map(str, runs.values())]
    models += [str(root / "merges" / p) for p in ("average", "ties")]
    run = RunConfig(
        eval=EvalConfig(
            models=models,
            tasks=TASKS,
            k=2,
            max_new_tokens=8,
            max_prompts=3,
            greedy=False,
            batch_size=16,
            out_dir=str(root),
            workers=1,
        ),
        logger=LoggerConfig(name="none", mode="disabled"),
    )
    evaluate(run)
    (root / "fidelity.md").write_text(RECIPE_TABLE)  # what rlvr.study writes for a recipe
    build_report(root)
    return root


RECIPE_TABLE = "| stage | setting | paper | this study | status | reason |\n|---|---|---|---|---|---|\n"


def test_the_recipe_table_goes_in_the_report(study):
    text = (study / "report" / "report.md").read_text()
    assert "## Fidelity to the paper's recipe" in text and RECIPE_TABLE in text


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def sample_mean(study: Path, label: str, bench: str) -> float:
    lines = (study / "eval" / label / f"{bench}.jsonl").read_text().splitlines()
    scores = [json.loads(x)["score"] for x in lines]
    return 100 * sum(scores) / len(scores)


def test_report_files_exist(study):
    folder = study / "report"
    for stem in ("main_table", "merge_table", "diff_table", "cost_table"):
        assert (folder / f"{stem}.md").read_text().startswith("### ")
        assert (folder / f"{stem}.csv").stat().st_size > 0
    for image in ("difference_to_sft.png", "reward_curves.png"):
        assert (folder / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (folder / "report.md").read_text()
    assert "![difference_to_sft](difference_to_sft.png)" in text and "Main table" in text
    assert "Recovery of the experts' gains" in text and "routed experts" in text
    rows = read_csv(folder / "calibration.csv")  # room for RL, from the SFT row
    assert {r["model"] for r in rows} == {"sft"} and len(rows) == len(TASKS)
    assert "Room for RL" in text


def test_main_table_rows_columns_and_numbers(study):
    rows = read_csv(study / "report" / "main_table.csv")
    assert [(r["model"], r["role"]) for r in rows] == [
        ("sft", "sft"),
        ("math", "expert"),
        ("instruction", "expert"),
        ("average", "merge"),
        ("ties", "merge"),
        ("mixed", "mixed"),
    ]
    assert list(rows[0]) == [
        "model",
        "role",
        "math/micro_math",
        "instruction/micro_instruction",
        "avg",
    ]
    for r in rows:
        cells = [sample_mean(study, r["model"], b) for b in ("micro_math", "micro_instruction")]
        assert float(r["math/micro_math"]) == pytest.approx(cells[0])
        assert float(r["instruction/micro_instruction"]) == pytest.approx(cells[1])
        assert float(r["avg"]) == pytest.approx(sum(cells) / 2)


def test_difference_table_is_mixed_minus_best_merge(study):
    rows = {r["domain"]: r for r in read_csv(study / "report" / "diff_table.csv")}
    assert set(rows) == {"math", "instruction", "avg"}
    for domain, bench in (("math", "micro_math"), ("instruction", "micro_instruction")):
        merges = {m: sample_mean(study, m, bench) for m in ("average", "ties")}
        best = max(merges.values())
        assert float(rows[domain]["best merge score"]) == pytest.approx(best)
        mixed = sample_mean(study, "mixed", bench)
        assert float(rows[domain]["mixed - best merge"]) == pytest.approx(mixed - best)


def test_cost_table_sums_experts_and_merge(study):
    rows = {r["run"]: r for r in read_csv(study / "report" / "cost_table.csv")}
    merges = [r for r in read_csv(study / "report" / "main_table.csv") if r["role"] == "merge"]
    best = max(merges, key=lambda r: float(r["avg"]))["model"]  # first of equals, like the report
    info = json.loads((study / "merges" / best / "merge.json").read_text())
    merge_s = info["device_seconds"]
    separate = COST["math"] + COST["instruction"] + merge_s
    assert float(rows["separate (experts + merge)"]["device_seconds"]) == pytest.approx(separate)
    assert float(rows["mixed (total)"]["device_seconds"]) == pytest.approx(COST["mixed"])
    assert float(rows["mixed / separate"]["device_seconds"]) == pytest.approx(COST["mixed"] / separate)
    total = sum_compute([study / "math", study / "instruction", study / "nowhere"])
    assert total["device_seconds"] == pytest.approx(80.0) and total["missing"] == [str(study / "nowhere")]


def test_merge_table_lists_the_merges_by_domain(study):
    rows = read_csv(study / "report" / "merge_table.csv")
    assert [(r["merge"], r["mergekit method"]) for r in rows] == [
        ("average", "linear"),
        ("ties", "ties"),
    ]
    assert list(rows[0]) == ["merge", "mergekit method", "math", "instruction", "avg"]


def test_report_cli_rewrites_the_tables(study):
    (study / "report" / "main_table.md").unlink()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "rlvr.report", f"report.study_dir={study}", "logger=none"]
    cmd += [f"hydra.run.dir={study / 'hydra'}", "report.metric=pass_at_k"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pass_at_k" in (study / "report" / "main_table.md").read_text()
    with pytest.raises(ConfigError, match="report.metric"):
        build_report(study, metric="nope")


@pytest.mark.slow
def test_wandb_offline_logs_tables_and_images(study, monkeypatch):
    from rlvr.config import ReportConfig
    from rlvr.report import report_stage
    from rlvr.tracking.readback import find_logs, read_finished_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = RunConfig(
        logger=LoggerConfig(name="wandb", mode="offline"),
        report=ReportConfig(study_dir=str(study)),
    )
    report_stage(run)
    (log,) = find_logs(study / "report" / "wandb")
    logged = read_finished_run(log)
    assert logged.run["job_type"] == "report"
    keys = logged.keys()
    for table in ("main_table", "merge_table", "diff_table", "cost_table"):
        assert keys & {f"{table}/_type"}, (table, sorted(keys))
    assert "difference_to_sft/_type" in keys and "recovery_table/_type" in keys  # the heatmap, the recovery


@pytest.mark.slow
def test_an_evaluation_stage_logs_its_scores_and_a_sample_of_records(study, monkeypatch, tmp_path):
    from rlvr.tracking.evaluation_log import log_evaluation
    from rlvr.tracking.readback import find_logs, read_finished_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    sft_path = json.loads((study / "eval" / "sft" / "model.json").read_text())["path"]
    run = RunConfig(
        eval=EvalConfig(models=[f"sft={sft_path}"], tasks=TASKS, out_dir=str(study)),
        logger=LoggerConfig(name="wandb", mode="offline"),
        run_name="eval-sft",
    )
    log_evaluation(run, tmp_path, study)
    logged = read_finished_run(find_logs(tmp_path)[0])
    sft = json.loads((study / "eval" / "sft" / "micro_math.json").read_text())
    assert logged.summary["eval/math/micro_math/avg_at_k"] == pytest.approx(sft["avg_at_k"])
    assert "eval/instruction/micro_instruction/pass_at_k" in logged.summary
    assert logged.summary["eval/records/_type"] == "table-file"
    assert logged.summary["eval/records/nrows"] > 0
