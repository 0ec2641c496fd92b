"""eval=m2rl_paper, and each benchmark's own K (``eval.k_by_task``) through the evaluator."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from test_merge import one_torch_thread, tiny_family  # noqa: F401  (autouse fixture)

from rlvr.config import ConfigError, DomainConfig, EvalConfig, LoggerConfig, RunConfig

BENCHMARKS = (
    "aime24", "aime25", "livecodebench_v5", "livecodebench_v6", "hle", "gpqa_diamond",
    "ifeval", "ifbench", "mmlu_redux",
)  # fmt: skip


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
    assert (e.top_p, e.temperature, e.max_new_tokens, e.greedy, e.backend) == (
        0.7, 1.0, 32768, False, "vllm"
    )  # fmt: skip
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
    settings = dict(k=3, max_new_tokens=6, max_prompts=2, batch_size=16, workers=1, greedy=False)
    settings.update(kw)
    return RunConfig(
        eval=EvalConfig(models=models, tasks=tasks, out_dir=str(out), **settings),
        logger=LoggerConfig(name="none", mode="disabled"),
    )


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    return tiny_family(tmp_path_factory.mktemp("paperfamily"), 0)


def test_each_benchmark_is_sampled_its_own_k_and_the_summary_says_so(family, tmp_path):
    from rlvr.evaluation.evaluator import evaluate

    base, _ = family
    run = eval_run(tmp_path, [f"b={base}"], ["micro_math", "micro_science"],
                   k_by_task={"micro_math": 2})  # fmt: skip
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
    with pytest.raises(ConfigError, match=r"eval.k_by_task names unknown benchmark.*aime2024.*"
                                          r"correct the name or drop the entry"):  # fmt: skip
        check(k_by_task={"aime2024": 16})
    with pytest.raises(ConfigError, match=r"eval.k_by_task.*integer >= 1"):
        check(k_by_task={"aime24": 0})


def test_new_tokens_are_clamped_to_the_models_positions(family, tmp_path, caplog):
    from rlvr.evaluation.evaluator import evaluate

    base, _ = family
    limit = json.loads((base / "config.json").read_text())["max_position_embeddings"]
    run = eval_run(tmp_path, [f"b={base}"], ["micro_math"], k=1, max_prompts=1,
                   max_new_tokens=limit + 50)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="rlvr.evaluation.evaluator"):
        study = evaluate(run)
    facts = json.loads((study / "eval" / "b" / "micro_math.json").read_text())
    clamped = facts["decoding"]["max_new_tokens"]
    assert facts["max_new_tokens_requested"] == limit + 50 and 0 < clamped < limit
    assert f"exceed the model's {limit} positions: generating at most {clamped}" in caplog.text


def test_a_prompt_that_fills_the_positions_is_an_error():
    from rlvr.evaluation.evaluator import fit_to_positions
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
    with pytest.raises(ConfigError, match="a prompt of 10 tokens fills the model's 10 positions"):
        fit_to_positions(Decoding(max_new_tokens=1), Backend(), rows, "m/b")
