"""Evaluation as the paper measures it: every test of a code problem, the format gate only for
models trained to think, resumable shards (a real SIGKILL), one model loaded at a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import weakref
from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from test_evaluate import eval_run, read_jsonl
from test_merge import one_torch_thread, tiny_family  # noqa: F401  (autouse fixture)

from rlvr.config import DomainConfig
from rlvr.evaluation import evaluator
from rlvr.evaluation.evaluator import evaluate, make_eval_scorer

REPO = Path(__file__).resolve().parents[1]
PROMPTS = 4  # the killed evaluation's prompts, one shard each
CAP = 20  # the training cap conf/domains/*code.yaml state
TESTS = 30  # more than the cap; seed 0's sample of 20 leaves out the last one (asserted below)


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    return tiny_family(tmp_path_factory.mktemp("paperfamily"), 1)


def livecodebench_row(tmp_path: Path) -> dict:
    """A LiveCodeBench problem with ``TESTS`` stdin tests (1 public, the rest private)."""
    from tasks.registry import load_task_rows

    tests = [{"input": f"{i}\n", "output": f"{i}\n", "testtype": "stdin"} for i in range(TESTS)]
    raw = {
        "question_id": "echo1",
        "question_title": "Echo",
        "platform": "atcoder",
        "question_content": "Print the integer you read.",
        "starter_code": "",
        "contest_date": "2024-09-01T00:00:00",
        "metadata": "{}",
        "public_test_cases": json.dumps(tests[:1]),
        "private_test_cases": json.dumps(tests[1:]),
    }
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(raw) + "\n")
    (row,) = load_task_rows("livecodebench_v5", data_files=str(path))
    return row


def test_a_benchmark_grades_every_test_while_training_rewards_keep_the_cap(tmp_path):
    import random

    from rlvr.training.stages import make_scorer

    row = livecodebench_row(tmp_path)
    reference = json.loads(row["reference"])
    assert len(reference["cases"]) == TESTS  # the adapter keeps every private test
    assert TESTS - 1 not in random.Random(0).sample(range(TESTS), CAP)  # the reward's sample
    # right on every test but the last one
    wrong_last = f"```python\nx = input()\nprint(x if x != '{TESTS - 1}' else 'no')\n```"
    options = {"code": {"max_tests": CAP}}
    run = eval_run(tmp_path, ["m=tiny"], ["livecodebench_v5"])
    run.domains = {"code": DomainConfig(train_tasks=["micro_code"], verifier_options=options)}
    item = [(wrong_last, reference, row["verifier"])]
    (graded,) = make_eval_scorer(run)(item)
    (rewarded,) = make_scorer(run)(item)
    assert graded.status.value == "wrong" and graded.score == 0.0
    assert rewarded.status.value == "correct" and rewarded.score == 1.0  # 20 sampled, all pass
    for conf in ("code.yaml", "m2rl/code.yaml"):  # the cap is stated where training reads it
        domains = OmegaConf.load(REPO / "conf" / "domains" / conf)
        assert domains.code.verifier_options.code.max_tests == CAP, conf


def test_a_correct_but_slow_solution_gets_a_budget_for_every_test_at_evaluation(tmp_path):
    """The reward's sample budget (the sandbox's time_limit_s) bounds reward latency; a benchmark
    grades all 30 tests within LiveCodeBench's (limit + 1) x tests + 5 s instead."""
    from dataclasses import replace

    from rlvr.training.stages import make_scorer

    row = livecodebench_row(tmp_path)
    reference = json.loads(row["reference"])
    slow = "```python\nimport time\nx = input()\ntime.sleep(0.15)\nprint(x)\n```"
    run = eval_run(tmp_path, ["m=tiny"], ["livecodebench_v5"])
    run.domains = {"code": DomainConfig(train_tasks=["micro_code"])}
    run.sandbox = replace(run.sandbox, time_limit_s=2.0)  # under 20 tests x 0.15 s
    item = [(slow, reference, row["verifier"])]
    (rewarded,) = make_scorer(run)(item)
    (graded,) = make_eval_scorer(run)(item)
    assert rewarded.status.value == "timeout" and rewarded.score == 0.0
    assert graded.status.value == "correct", graded.details


def test_the_base_models_evaluation_stage_is_ungated_and_trained_models_keep_the_gate(tmp_path):
    from rlvr.config import to_config
    from rlvr.study.__main__ import plan
    from rlvr.study.commands import compose

    planned = plan(
        [
            "experiment=tiny_study",
            "study.seeds=[0]",
            "study.stages=[]",
            "study.merges=[ties]",
            "algo.format_gate=true",
            f"study.out_dir={tmp_path}",
        ]
    )
    gates = {}
    for name in ("eval-base", "eval-sft", "eval-math-seed0", "eval-mixed-seed0", "eval-ties-seed0"):
        run = to_config(compose(planned.commands[name][3:]))
        gates[name] = evaluator.eval_format_gate(run)
    assert gates == {
        "eval-base": False,
        "eval-sft": True,
        "eval-math-seed0": True,
        "eval-mixed-seed0": True,
        "eval-ties-seed0": True,
    }


def test_the_summary_records_the_gate_it_graded_with(family, tmp_path):
    """``eval.format_gate=false`` grades a model as if no gate were trained: its records are
    those of an ungated run, while the training's gate fails every completion of a model that
    never closes ``</think>``."""
    base, _ = family
    results = {}
    bench = "micro_instruction"  # its checks grade any text: a random model's is right or wrong
    for name, eval_gate, trained_gate in (
        ("gated", None, True),
        ("off", False, True),
        ("never", None, False),
    ):
        run = eval_run(tmp_path / name, [f"m={base}"], [bench], format_gate=eval_gate)
        run.algo.format_gate = trained_gate
        evaluate(run)
        folder = tmp_path / name / "eval" / "m"
        summary = json.loads((folder / f"{bench}.json").read_text())
        results[name] = summary["format_gate"], read_jsonl(folder / f"{bench}.jsonl")
    assert [gate for gate, _ in results.values()] == [True, False, False]
    assert {r["status"] for r in results["gated"][1]} == {"format_error"}
    assert {r["extracted"] for r in results["gated"][1]} == {None}
    assert "format_error" not in {r["status"] for r in results["off"][1]}  # graded, right or not
    assert results["off"][1] == results["never"][1]


def _evaluate_command(model: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rlvr.evaluate",
        f"eval.models=['m={model}']",
        "eval.tasks=[micro_math]",
        f"eval.max_prompts={PROMPTS}",
        "eval.shard_prompts=1",
        "eval.k=2",
        "eval.max_new_tokens=32",
        "eval.batch_size=16",
        "eval.workers=1",
        "logger=none",
        f"eval.out_dir={out}",
        f"hydra.run.dir={out / 'hydra'}",
    ]


ENV = {**os.environ, "OMP_NUM_THREADS": "1"}  # a tiny model on shared cores: threads only spin


def _run(command: list[str]) -> None:
    done = subprocess.run(command, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


@pytest.mark.slow  # three evaluation processes: about a minute on two shared cores
def test_an_evaluation_killed_after_a_shard_resumes_and_ends_with_the_same_records(family, tmp_path):
    base, _ = family
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    shards = killed / "eval" / "m" / ".micro_math.shards"
    # the uninterrupted evaluation runs beside the one to kill: tests run one at a time on
    # two cores, so each process gets a core of its own
    whole_log = (tmp_path / "whole.log").open("w")
    uninterrupted = subprocess.Popen(
        _evaluate_command(base, whole),
        cwd=REPO,
        env=ENV,
        stdout=whole_log,
        stderr=subprocess.STDOUT,
    )
    proc = subprocess.Popen(
        _evaluate_command(base, killed),
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not (shards / "00000.json").is_file():
            assert proc.poll() is None, "the evaluation ended before its first shard was seen"
            assert time.monotonic() < deadline, "no shard written in 300 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    written = len(list(shards.glob("*.json")))
    assert 1 <= written < PROMPTS, f"{written} of {PROMPTS} shards were written before the kill"
    assert not (killed / "eval" / "m" / "micro_math.json").exists()

    _run(_evaluate_command(base, killed))
    code = uninterrupted.wait(timeout=600)
    whole_log.close()
    assert code == 0, (tmp_path / "whole.log").read_text()[-3000:]
    resumed = json.loads((killed / "eval" / "m" / "micro_math.json").read_text())
    assert (resumed["shards"], resumed["shards_resumed"]) == (PROMPTS, written)
    uninterrupted = json.loads((whole / "eval" / "m" / "micro_math.json").read_text())
    assert uninterrupted["shards_resumed"] == 0
    records = read_jsonl(killed / "eval" / "m" / "micro_math.jsonl")
    assert records == read_jsonl(whole / "eval" / "m" / "micro_math.jsonl")
    assert len(records) == PROMPTS * (2 + 1)  # k samples and the greedy one per prompt
    for key in ("avg_at_k", "pass_at", "greedy_accuracy", "status_counts", "prompts"):
        assert resumed[key] == uninterrupted[key], key
    assert not shards.exists()  # the results hold every record now


def test_each_model_is_released_before_the_next_loads(family, tmp_path, monkeypatch):
    base, (expert,) = family
    real = evaluator.opened_backend
    loaded: list[weakref.ref] = []

    @contextmanager
    def watched(run, path):
        assert all(ref() is None for ref in loaded), "a previous model is still alive"
        with real(run, path) as (backend, resolved):
            loaded.append(weakref.ref(backend.model))
            yield backend, resolved
        assert backend.model is None  # closed on leaving

    monkeypatch.setattr(evaluator, "opened_backend", watched)
    evaluate(eval_run(tmp_path, [f"a={base}", f"b={expert}"], ["micro_math"], k=1, greedy=False))
    assert len(loaded) == 2 and loaded[-1]() is None


def test_a_shard_written_with_other_settings_or_prompts_is_evaluated_again(tmp_path):
    from rlvr.evaluation.shards import ShardResult, ShardStore, shard_ranges

    assert [(s.start, s.stop) for s in shard_ranges(5, 2)] == [(0, 2), (2, 4), (4, 5)]
    assert [(s.start, s.stop) for s in shard_ranges(5, 0)] == [(0, 5)]  # 0: one shard
    shard = shard_ranges(5, 2)[1]
    result = ShardResult([{"id": "a", "mode": "sample", "sample": 0}], 1.5)
    ShardStore(tmp_path, "b", "key1").save(shard, ["a", "b"], result)
    assert ShardStore(tmp_path, "b", "key1").load(shard, ["a", "b"]) == result
    assert ShardStore(tmp_path, "b", "key2").load(shard, ["a", "b"]) is None  # settings changed
    assert ShardStore(tmp_path, "b", "key1").load(shard, ["a", "c"]) is None  # other prompts
    ShardStore(tmp_path, "b", "key1").path(shard).write_text('{"key": "key1", "ids": [')
    assert ShardStore(tmp_path, "b", "key1").load(shard, ["a", "b"]) is None  # damaged
    assert not list((tmp_path / ".b.shards").glob("*.tmp"))  # written by replace, none left


def test_instruction_following_is_graded_all_or_nothing_whatever_the_reward_shape(tmp_path):
    from rlvr.training.stages import make_scorer

    reference = {
        "instruction_id_list": ["punctuation:no_comma", "keywords:existence"],
        "kwargs": [{}, {"keywords": ["tea"]}],
    }
    shaped = {"ifeval": {"reward": "fraction", "gate": ["keywords:existence"]}}
    run = eval_run(tmp_path, ["m=tiny"], ["ifeval"])
    run.domains = {"instruction": DomainConfig(train_tasks=["ifgen"], verifier_options=shaped)}
    item = [("I like tea, a lot.", reference, "ifeval")]  # one of two followed
    (rewarded,) = make_scorer(run)(item)
    (graded,) = make_eval_scorer(run)(item)
    assert rewarded.score == 0.5 and graded.score == 0.0
