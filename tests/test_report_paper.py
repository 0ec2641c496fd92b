"""The paper view (our models beside M2RL's published numbers), the packaged published tables,
eval=m2rl_paper, and each benchmark's own K (``eval.k_by_task``) through the evaluator."""

from __future__ import annotations

import csv
import json
import logging
import os
import statistics
import subprocess
import sys
from pathlib import Path

import _requirements as required
import pytest
import tomllib
from test_evaluate import eval_run as tiny_eval_run
from test_merge import one_torch_thread, tiny_family  # noqa: F401  (autouse fixture)
from test_report_seeds import write_run

from rlvr.config import ConfigError, DomainConfig, EvalConfig, RunConfig
from rlvr.report import build_report
from rlvr.reporting.paper import BENCHMARKS, NOT_RUN, PUBLISHED

REPO = Path(__file__).resolve().parents[1]
PAPER_FILES = ("main_table.csv", "compute.csv")
RUN = ("aime24", "gpqa_diamond", "ifeval")  # scored by every model below
BROKEN = "hle"  # evaluated, but every verdict a verifier error: no score, never a 0
ASKED = (*RUN, BROKEN)  # the study's eval tasks
# label -> per seed {benchmark: avg_at_k}; None: a label without a seed suffix
SCORES = {
    "base": {None: (0.05, 0.20, 0.30)},
    "sft": {None: (0.40, 0.45, 0.70)},
    "math": {0: (0.70, 0.50, 0.72), 1: (0.74, 0.52, 0.70)},
    "agent": {0: (0.41, 0.44, 0.69)},
    "mixed": {0: (0.72, 0.55, 0.88), 1: (0.70, 0.53, 0.90)},
    "ties": {0: (0.69, 0.54, 0.86), 1: (0.71, 0.56, 0.84)},
    "mt_opd": {0: (0.68, 0.55, 0.89)},
}
PUBLISHED_ROW = {
    "base": "qwen3-4b-base",
    "sft": "sft",
    "math": "math",
    "mixed": "mixed",
    "ties": "ties",
    "mt_opd": "mt_opd",
}
DOMAIN = {"aime24": "math", "gpqa_diamond": "science", "ifeval": "instruction", "hle": "science"}
HOURS = {"math": 2.0, "agent": 1.0, "mixed": 1.5, "mt_opd": 0.5}  # device-hours per run
FAILED = "sce-seed0"  # planned, its evaluation failed: no summary at all


def summary(label: str, bench: str, value: float | None, k: int) -> dict:
    statuses = {"error": 8} if value is None else {"correct": 4, "wrong": 4}
    return {
        "model": label,
        "benchmark": bench,
        "domain": DOMAIN[bench],
        "prompts": 8,
        "k": k,
        "avg_at_k": value or 0.0,
        "pass_at_k": value or 0.0,
        "status_counts": statuses,
    }


def eval_stage(label: str, status: str) -> dict:
    command = ["python", "-m", "rlvr.evaluate", f"eval.models=[{label}=x]"]
    command.append(f"eval.tasks=[{','.join(ASKED)}]")
    return {"kind": "eval", "command": command, "status": status, "out_dir": f"/s/eval/{label}"}


def write_paper_study(root: Path) -> Path:
    stages = {}
    for stem, by_seed in SCORES.items():
        for seed, values in by_seed.items():
            label = stem if seed is None else f"{stem}-seed{seed}"
            info: dict = {"path": label}
            if stem == "ties":
                info["merge"] = {"name": stem, "mergekit_method": "ties"}
            elif stem in HOURS:
                domains = ["math", "agent"] if stem in ("mixed", "mt_opd") else [stem]
                run = write_run(root, label, domains, HOURS[stem] * 3600 * (1 + (seed or 0)))
                facts = json.loads((run / "summary.json").read_text())
                facts["rl"] = {"steps": 10, "seconds": HOURS[stem] * 1800}
                facts |= {"distill": {"teachers": {}}} if stem == "mt_opd" else {}
                (run / "summary.json").write_text(json.dumps(facts))
                info |= {"run_dir": str(run), "domains": domains}
            folder = root / "eval" / label
            folder.mkdir(parents=True)
            (folder / "model.json").write_text(json.dumps({"label": label, **info}))
            for bench, value in [*zip(RUN, values, strict=True), (BROKEN, None)]:
                k = 16 if bench == "aime24" else 4
                (folder / f"{bench}.json").write_text(json.dumps(summary(label, bench, value, k)))
            stages[f"eval-{label}"] = eval_stage(label, "done")
    stages[f"eval-{FAILED}"] = eval_stage(FAILED, "failed")
    (root / "study.json").write_text(json.dumps({"plan": {}, "stages": stages}))
    return root


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = write_paper_study(tmp_path_factory.mktemp("paper"))
    build_report(root)
    return root


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def published() -> tuple[list[str], dict[str, dict[str, str]]]:
    columns, rows = read_csv(PUBLISHED / "main_table.csv")
    return columns, {r["model"]: r for r in rows}


def paper_rows(study: Path) -> dict[tuple[str, str], dict[str, str]]:
    _, rows = read_csv(study / "report" / "paper_table.csv")
    return {(r["model"], r["source"]): r for r in rows}


def ours(stem: str, bench: str) -> float:
    return statistics.mean(100 * v[RUN.index(bench)] for v in SCORES[stem].values())


def test_packaged_published_numbers_equal_the_shared_data():
    shared = required.shared_data("m2rl_paper")
    for name in PAPER_FILES:
        assert (PUBLISHED / name).read_bytes() == (shared / name).read_bytes(), name
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = data["package-data"]["rlvr.reporting"]
    shipped = {p.relative_to(PUBLISHED.parent) for pat in patterns for p in PUBLISHED.parent.glob(pat)}
    assert {Path("m2rl_paper") / n for n in (*PAPER_FILES, "SOURCE.md")} <= shipped


def test_columns_are_the_papers_nine_in_its_order(study):
    columns, _ = read_csv(study / "report" / "paper_table.csv")
    paper_columns, _ = published()
    ours_named = [{"ifeval": "ifeval_strict_prompt"}.get(b, b) for b in BENCHMARKS]
    assert ours_named == paper_columns[2:]
    assert [c for c in columns if c in BENCHMARKS] == list(BENCHMARKS)
    assert columns[:4] == ["model", "role", "paper row", "source"]


def test_every_mapped_role_sits_beside_its_published_row(study):
    rows = paper_rows(study)
    _, table = published()
    for stem, row_name in PUBLISHED_ROW.items():
        mine, theirs = rows[(stem, "ours")], rows[(stem, "paper")]
        diff = rows[(stem, "ours - paper")]
        assert mine["paper row"] == row_name
        for bench in BENCHMARKS:
            value = float(table[row_name][{"ifeval": "ifeval_strict_prompt"}.get(bench, bench)])
            assert float(theirs[bench]) == pytest.approx(value)  # every published number
            if bench in RUN:
                assert float(mine[bench]) == pytest.approx(ours(stem, bench))
                assert float(diff[bench]) == pytest.approx(ours(stem, bench) - value)
            else:  # not scored here: a dash, never a 0
                assert mine[bench] == diff[bench] == NOT_RUN
        scored = [float(table[row_name][{"ifeval": "ifeval_strict_prompt"}.get(b, b)]) for b in RUN]
        mean_ours = statistics.mean(ours(stem, b) for b in RUN)
        assert float(mine["avg"]) == pytest.approx(mean_ours)
        assert float(diff["avg"]) == pytest.approx(mean_ours - statistics.mean(scored))


def test_seeds_show_as_mean_and_sd_in_the_markdown(study):
    text = (study / "report" / "paper_table.md").read_text()
    values = [100 * v[0] for v in SCORES["mixed"].values()]
    spread = f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"
    line = next(x for x in text.splitlines() if x.startswith("| mixed | mixed | mixed | ours |"))
    assert spread in line
    assert "K per benchmark" in text and "aime24 16" in text and "gpqa_diamond 4" in text


def test_the_agent_expert_has_no_published_row(study):
    rows = paper_rows(study)
    assert rows[("agent", "ours")]["paper row"] == NOT_RUN
    assert float(rows[("agent", "ours")]["aime24"]) == pytest.approx(ours("agent", "aime24"))
    for source in ("paper", "ours - paper"):
        assert {rows[("agent", source)][b] for b in BENCHMARKS} == {NOT_RUN}


def test_benchmarks_not_run_are_listed_with_their_reason(study):
    _, rows = read_csv(study / "report" / "paper_not_run.csv")
    reasons = {(r["benchmark"], r["models"]): r["reason"] for r in rows}
    for bench in ("aime25", "livecodebench_v5", "livecodebench_v6", "ifbench", "mmlu_redux"):
        assert "not in the study's eval tasks" in reasons[(bench, "all")]
    labels = {f"{s}-seed{n}" if n is not None else s for s in SCORES for n in SCORES[s]}
    (broken,) = [m for (b, m), why in reasons.items() if b == BROKEN and "verifier error" in why]
    assert set(broken.split(", ")) == labels  # a summary that scores nothing is no 0
    failed = f"in the study's eval tasks, no summary: stage eval-{FAILED} failed"
    for bench in ASKED:
        assert reasons[(bench, FAILED)] == failed
    assert float(paper_rows(study)[("sft", "paper")][BROKEN]) > 0  # published, ours a dash
    assert paper_rows(study)[("sft", "ours")][BROKEN] == NOT_RUN
    report = (study / "report" / "report.md").read_text()
    assert "## Beside the paper" in report and "Paper benchmarks not run" in report
    assert "Compute beside the paper" in report


def test_compute_sits_beside_the_papers_gpu_hours(study):
    _, rows = read_csv(study / "report" / "paper_compute.csv")
    by = {r["run"]: r for r in rows}
    _, paper = read_csv(PUBLISHED / "compute.csv")
    hours = {r["run"]: float(r["gpu_hours"]) for r in paper}
    experts = sum(hours[d] for d in ("math", "code", "science", "instruction"))
    assert float(by["mixed"]["paper GPU-hours"]) == hours["mixed"]
    assert float(by["mixed"]["paper share of experts (%)"]) == pytest.approx(100 * hours["mixed"] / experts)
    assert float(by["code"]["paper GPU-hours"]) == hours["code"] and by["code"]["our runs"] == "—"
    # ours: device-hours mean per seed (math: seeds of 2 and 4 hours), RL hours half of each
    assert float(by["math"]["our device-hours"]) == pytest.approx(3.0)
    assert by["math"]["our runs"] == "2" and float(by["math"]["our steps"]) == 10
    rl = {name: HOURS[name] / 2 for name in HOURS}
    ours_experts = rl["math"] + rl["agent"]
    assert float(by["experts (sum)"]["our RL device-hours"]) == pytest.approx(ours_experts)
    assert float(by["mixed"]["our share of experts (%)"]) == pytest.approx(100 * rl["mixed"] / ours_experts)
    assert by["agent"]["paper GPU-hours"] == NOT_RUN and float(by["mt_opd"]["paper steps"]) == 200


def test_m2rl_paper_eval_composes_with_the_release_decoding():
    from hydra import compose, initialize_config_dir

    from rlvr.config import register_configs, to_config
    from rlvr.runs.cli import CONF_DIR, register_resolvers

    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["eval=m2rl_paper", "logger=none"])
        study_cfg = compose("train", overrides=["experiment=m2rl_study", "logger=none"])
    cfg.run_name = study_cfg.run_name = "compose-test"
    e = to_config(cfg).eval
    assert tuple(e.tasks) == BENCHMARKS  # the paper's column order
    assert (e.top_p, e.temperature, e.max_new_tokens, e.greedy, e.backend) == (0.7, 1.0, 32768, False, "vllm")
    assert set(e.k_by_task) == set(BENCHMARKS)
    assert (e.k_by_task["aime24"], e.k_by_task["gpqa_diamond"], e.k_by_task["ifbench"]) == (
        16,
        4,
        1,
    )
    study_run = to_config(study_cfg)
    assert study_run.eval.tasks == e.tasks and study_run.eval.k_by_task == e.k_by_task

    from rlvr.planning.stage_plan import plan_eval

    note = plan_eval(study_run, "eval-sft").note  # 1,024 + 32,768 tokens > 32,768 positions
    assert "32768 positions" in note and "clamps new tokens" in note


def eval_run(out: Path, models: list[str], tasks: list[str], **kw) -> RunConfig:
    """test_evaluate's tiny evaluation, two prompts a benchmark, sampled only."""
    return tiny_eval_run(out, models, tasks, **{"max_prompts": 2, "greedy": False, **kw})


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    return tiny_family(tmp_path_factory.mktemp("paperfamily"), 0)


def test_each_benchmark_is_sampled_its_own_k_and_the_summary_says_so(family, tmp_path):
    from rlvr.evaluation.evaluator import evaluate

    base, _ = family
    run = eval_run(tmp_path, [f"b={base}"], ["micro_math", "micro_science"], k_by_task={"micro_math": 2})
    study = evaluate(run)
    for bench, k in (("micro_math", 2), ("micro_science", 3)):
        facts = json.loads((study / "eval" / "b" / f"{bench}.json").read_text())
        records = (study / "eval" / "b" / f"{bench}.jsonl").read_text().splitlines()
        assert facts["k"] == facts["decoding"]["k"] == k
        assert len(records) == 2 * k and set(facts["pass_at"]) == {str(j) for j in (1, 2, k)}
        assert "max_new_tokens_requested" not in facts


def test_k_by_task_is_validated_naming_the_fix():
    from rlvr.config import validate

    def check(**kw):
        run = RunConfig(eval=EvalConfig(tasks=["aime24", "micro_math"], **kw))
        run.domains = {"math": DomainConfig(train_tasks=["gsm8k"])}
        validate(run, check_paths=False)

    check(k_by_task={"aime24": 16, "gpqa_diamond": 4})  # a registered task beyond eval.tasks
    with pytest.raises(
        ConfigError,
        match=r"eval.k_by_task names unknown benchmark.*aime2024.*"
        r"correct the name or drop the entry",
    ):
        check(k_by_task={"aime2024": 16})
    with pytest.raises(ConfigError, match=r"eval.k_by_task.*integer >= 1"):
        check(k_by_task={"aime24": 0})


def test_new_tokens_are_clamped_to_the_models_positions(family, tmp_path, caplog):
    from rlvr.evaluation.evaluator import evaluate

    base, _ = family
    limit = json.loads((base / "config.json").read_text())["max_position_embeddings"]
    run = eval_run(tmp_path, [f"b={base}"], ["micro_math"], k=1, max_prompts=1, max_new_tokens=limit + 50)
    with caplog.at_level(logging.WARNING, logger="rlvr.evaluation.evaluator"):
        study = evaluate(run)
    facts = json.loads((study / "eval" / "b" / "micro_math.json").read_text())
    clamped = facts["decoding"]["max_new_tokens"]
    assert facts["max_new_tokens_requested"] == limit + 50 and 0 < clamped < limit
    assert f"exceed the model's {limit} positions: generating at most {clamped}" in caplog.text


def test_a_prompt_that_fills_the_positions_is_refused():
    from rlvr.evaluation.evaluator import PromptTooLong, fit_to_positions
    from rlvr.evaluation.generation import Decoding

    class Chat:
        def ids(self, tokenizer, prompt):
            return list(range(len(prompt[0]["content"])))

    class Backend:
        tokenizer, chat, max_positions = None, Chat(), 10

    rows = [{"prompt": [{"role": "user", "content": "x" * n}]} for n in (3, 6)]
    assert fit_to_positions(Decoding(max_new_tokens=4), Backend(), rows, "m/b").max_new_tokens == 4
    assert fit_to_positions(Decoding(max_new_tokens=9), Backend(), rows, "m/b").max_new_tokens == 4
    rows.append({"prompt": [{"role": "user", "content": "x" * 10}]})
    with pytest.raises(PromptTooLong, match="a prompt of 10 tokens fills the model's 10 positions"):
        fit_to_positions(Decoding(max_new_tokens=1), Backend(), rows, "m/b")


@pytest.mark.slow
def test_the_nine_benchmarks_run_on_the_tiny_model(tiny_model_dir, rlvr_cache, tmp_path):
    """``python -m rlvr.evaluate eval=m2rl_paper`` as typed, on the tiny model, two prompts a
    benchmark: the shared data for AIME, IFEval and IFBench, the Hub-layout fixtures (through
    ``RLVR_TASK_FILES``) for the benchmarks only the Hub holds. Each benchmark is sampled its
    own K and every sample gets a scored verdict, never a verifier error."""
    from omegaconf import OmegaConf

    from tasks.registry import shared_data_dir

    data = shared_data_dir()
    if not (data / "math" / "aime24_test.jsonl").is_file():
        required.missing(f"the shared evaluation data folder ({data})")
    fixtures = REPO / "tests" / "fixtures" / "benchmarks"
    files = {
        "livecodebench_v5": "livecodebench.jsonl",
        "livecodebench_v6": "livecodebench.jsonl",
        "hle": "hle.jsonl",
        "gpqa_diamond": "gpqa_diamond.jsonl",
        "mmlu_redux": "mmlu_redux.jsonl",
    }
    env = {
        **os.environ,
        "RLVR_CACHE": str(rlvr_cache),
        "RLVR_SHARED_DATA": str(data),
        "RLVR_TASK_FILES": ";".join(f"{t}={fixtures / f}" for t, f in files.items()),
    }
    cmd = [
        sys.executable,
        "-m",
        "rlvr.evaluate",
        "eval=m2rl_paper",
        "eval.backend=transformers",
        "eval.max_prompts=2",
        "eval.max_new_tokens=24",
        "eval.workers=1",
        "logger=none",
        f"eval.models=['tiny={tiny_model_dir}']",
        f"eval.out_dir={tmp_path}",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    paper = OmegaConf.load(REPO / "conf" / "eval" / "m2rl_paper.yaml")
    not_run = {}
    for bench in BENCHMARKS:
        facts = json.loads((tmp_path / "eval" / "tiny" / f"{bench}.json").read_text())
        if facts.get("not_run"):  # the tiny model's 512 positions cannot hold its prompts
            assert "positions" in facts["not_run"] and "avg_at_k" not in facts
            not_run[bench] = facts["not_run"]
            continue
        records = [json.loads(x) for x in (tmp_path / "eval" / "tiny" / f"{bench}.jsonl").read_text().splitlines()]
        assert facts["k"] == paper.k_by_task[bench], bench
        assert len(records) == facts["prompts"] * facts["k"] and facts["prompts"] >= 1, bench
        assert {r["status"] for r in records} <= {"correct", "wrong", "format_error", "timeout"}, (
            bench,
            {r["status"] for r in records},
        )
    assert len(not_run) < len(BENCHMARKS) // 2, not_run  # most of the nine run on it
    listed = (build_report(tmp_path).folder / "paper_not_run.md").read_text()
    for bench, why in not_run.items():
        assert bench in listed and why in listed
