"""Evaluation on tiny models: per-sample JSONL, summaries consistent with it, pass@k, resume."""

from __future__ import annotations

import json
from pathlib import Path

import _requirements as required
import pytest
from test_merge import one_torch_thread, tiny_family  # noqa: F401  (autouse fixture)

from rlvr.config import ConfigError, EvalConfig, LoggerConfig, RunConfig
from rlvr.evaluation.benchmarks import load_benchmark
from rlvr.evaluation.evaluator import evaluate, parse_models
from rlvr.evaluation.metrics import summarise
from tasks.registry import shared_data_dir
from verifiers import Verdict

SHARED = shared_data_dir()


def eval_run(out: Path, models: list[str], tasks: list[str], **kw) -> RunConfig:
    settings = dict(k=3, max_new_tokens=6, max_prompts=3, batch_size=16, workers=1)
    settings.update(kw)
    return RunConfig(
        eval=EvalConfig(models=models, tasks=tasks, out_dir=str(out), **settings),
        logger=LoggerConfig(name="none", mode="disabled"),
    )


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    return tiny_family(tmp_path_factory.mktemp("evalfamily"), 1)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_summary_matches_the_per_sample_records(family, tmp_path):
    base, (expert,) = family
    run = eval_run(tmp_path, [f"base={base}", str(expert)], ["micro_math", "micro_science"])
    study = evaluate(run)
    for label in ("base", expert.name):
        info = json.loads((study / "eval" / label / "model.json").read_text())
        assert info["label"] == label
        for bench in ("micro_math", "micro_science"):
            summary = json.loads((study / "eval" / label / f"{bench}.json").read_text())
            records = read_jsonl(study / "eval" / label / f"{bench}.jsonl")
            sampled = [r for r in records if r["mode"] == "sample"]
            greedy = [r for r in records if r["mode"] == "greedy"]
            assert len(sampled) == 3 * 3 and len(greedy) == 3
            assert {r["sample"] for r in sampled} == {0, 1, 2}
            assert summary["avg_at_k"] == pytest.approx(sum(r["score"] for r in sampled) / 9)
            assert summary["greedy_accuracy"] == pytest.approx(sum(r["score"] for r in greedy) / 3)
            assert sum(summary["status_counts"].values()) == 9
            assert summary["domain"] == bench.removeprefix("micro_")
            assert set(summary["pass_at"]) == {"1", "2", "3"}


def test_temperature_zero_evaluates_greedily_alone(family, tmp_path):
    """``eval.temperature=0``: one greedy completion per prompt, as the greedy beside a sampled
    evaluation decodes it, and Avg@1 is the greedy accuracy."""
    base, _ = family
    alone = evaluate(eval_run(tmp_path / "alone", [f"base={base}"], ["micro_math"], temperature=0))
    beside = evaluate(eval_run(tmp_path / "beside", [f"base={base}"], ["micro_math"]))
    summary = json.loads((alone / "eval" / "base" / "micro_math.json").read_text())
    records = read_jsonl(alone / "eval" / "base" / "micro_math.jsonl")
    assert [r["mode"] for r in records] == ["greedy"] * 3 and summary["k"] == 1
    assert summary["avg_at_k"] == summary["greedy_accuracy"]
    assert summary["decoding"]["k"] == 1  # the record says what was decoded, not eval.k
    greedy = [r for r in read_jsonl(beside / "eval" / "base" / "micro_math.jsonl") if r["mode"] == "greedy"]
    assert [r["completion"] for r in records] == [r["completion"] for r in greedy]


def test_finished_pairs_are_not_recomputed(family, tmp_path):
    base, _ = family
    run = eval_run(tmp_path, [f"b={base}"], ["micro_math", "micro_code"], greedy=False, k=2)
    evaluate(run)
    folder = tmp_path / "eval" / "b"
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    (folder / "micro_code.json").unlink()
    evaluate(run)
    assert (folder / "micro_code.json").is_file()
    assert (folder / "micro_math.json").stat().st_mtime_ns == stamps["micro_math.json"]
    assert (folder / "micro_math.jsonl").stat().st_mtime_ns == stamps["micro_math.jsonl"]


def _verdicts(pattern: str) -> list[Verdict]:
    return [Verdict.correct("x") if ch == "1" else Verdict.wrong("y") for ch in pattern]


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        # per prompt: k=4 samples; unbiased pass@j = 1 - C(n-c, j) / C(n, j), averaged over prompts
        (["0000", "1100"], {"1": 0.25, "2": (0 + 5 / 6) / 2, "4": 0.5, "avg": 0.25}),
        (["1111", "1000"], {"1": 0.625, "2": (1 + 0.5) / 2, "4": 1.0, "avg": 0.625}),
        (["0000", "0000"], {"1": 0.0, "2": 0.0, "4": 0.0, "avg": 0.0}),
    ],
)
def test_avg_and_unbiased_pass_at_k(patterns, expected):
    rows = [{"id": str(i)} for i in range(len(patterns))]
    out = summarise(rows, [_verdicts(p) for p in patterns], None, k=4)
    assert out["avg_at_k"] == pytest.approx(expected["avg"])
    for j in ("1", "2", "4"):
        assert out["pass_at"][j] == pytest.approx(expected[j]), j
    assert out["pass_at_k"] == out["pass_at"]["4"] and "greedy_accuracy" not in out


def test_model_labels(family, tmp_path):
    base, (expert,) = family
    run = tmp_path / "mathrun"
    (run / "final").mkdir(parents=True)
    (run / "final" / "config.json").write_text("{}")
    entries = parse_models([f"sft={base}", str(run), str(expert)])
    assert [e.label for e in entries] == ["sft", "mathrun", expert.name]
    assert entries[1].path == str((run / "final").resolve())
    with pytest.raises(ConfigError, match="duplicate labels"):
        parse_models([f"a={base}", f"a={expert}"])
    with pytest.raises(ConfigError, match="neither an existing folder nor a Hub id"):
        parse_models([f"typo={tmp_path}/no/such/run"])
    assert parse_models(["tiny", "b=Qwen/Qwen3-4B-Base"])[1].path == "Qwen/Qwen3-4B-Base"


def test_bad_benchmarks_fail_before_any_model_loads(tmp_path):
    with pytest.raises(ConfigError, match="no micro-suite generator"):
        load_benchmark("micro_chemistry", 2, str(SHARED), 0)
    with pytest.raises(ConfigError, match="eval.models"):
        evaluate(eval_run(tmp_path, [], ["micro_math"]))


@required.needs_shared_data("math")
def test_shared_benchmark_rows_load_with_a_limit():
    rows = load_benchmark("gsm8k", 2, str(SHARED), 0)
    assert len(rows) == 2 and all(r["domain"] == "math" for r in rows)


def test_backend_returns_completions_in_input_order(family):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr.evaluation.backends import TransformersBackend
    from rlvr.evaluation.generation import Decoding, generate

    base, _ = family
    model, tok = AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)
    prompts = [[{"role": "user", "content": "x" * n}] for n in (9, 1, 30, 4, 17)]
    greedy = Decoding(greedy=True, max_new_tokens=5)
    batched = TransformersBackend(model, tok, batch_size=1, seed=0).generate(prompts, greedy)
    alone = [generate(model, tok, [p], greedy)[0] for p in prompts]
    assert batched == alone


@pytest.mark.parametrize("preset", ["micro", "benchmarks"])
def test_eval_presets_compose_and_name_known_tasks(preset):
    from hydra import compose, initialize_config_dir

    from rlvr.config import register_configs, to_config
    from rlvr.evaluation.benchmarks import benchmark_domain
    from rlvr.runs.cli import CONF_DIR, register_resolvers

    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[f"eval={preset}", "logger=none"])
    cfg.run_name = "compose-test"
    run = to_config(cfg)
    assert run.eval.tasks
    assert {benchmark_domain(t) for t in run.eval.tasks} <= {"math", "code", "science", "instruction", "agent"}


def test_micro_difficulty_selects_levels():
    from tasks import micro

    easy = load_benchmark("micro_math", 6, str(SHARED), 0, difficulty=1)
    assert easy == micro.generate("math", 6, 0, 1, split="heldout")
    assert easy != load_benchmark("micro_math", 6, str(SHARED), 0, difficulty=3)


def test_agent_benchmark_runs_as_tool_episodes(family, tmp_path):
    """micro_agent rows name an environment: each sample is a live episode, scored on it."""
    base, _ = family
    run = eval_run(tmp_path, [f"b={base}"], ["micro_agent"], k=2, max_new_tokens=16)
    study = evaluate(run)
    records = read_jsonl(study / "eval" / "b" / "micro_agent.jsonl")
    assert len([r for r in records if r["mode"] == "sample"]) == 3 * 2
    assert {r["status"] for r in records} <= {"correct", "wrong", "format_error", "error"}
    summary = json.loads((study / "eval" / "b" / "micro_agent.json").read_text())
    assert summary["domain"] == "agent" and summary["prompts"] == 3


def test_agent_benchmark_with_vllm_fails_before_any_model_loads(tmp_path):
    run = eval_run(tmp_path, ["tiny"], ["micro_math", "micro_agent"], backend="vllm")
    with pytest.raises(ConfigError, match=r"\['micro_agent'\].*eval.backend=transformers"):
        evaluate(run)
