"""Verifier infrastructure failures end to end: a worker SIGKILLed mid-batch behind the GRPO
reward bridge, and a real GRPO run that aborts on a domain's verifier error rate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pool_doubles import KilledOnceVerifier, kill_when_published
from test_train import only_run_dir, run_cli

from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
from rlvr.rewards.scoring import build_scorer, sequential_scorer
from rlvr.training.checkpoints import is_complete, latest_complete_checkpoint
from tasks import micro
from verifiers import ReasoningFormat
from verifiers.pool.pool import MAX_ITEM_ATTEMPTS
from verifiers.pool.worker import FAULT_ENV
from verifiers.registry import register

register("killed_once", KilledOnceVerifier)  # rows name verifiers; the bridge builds them


def reward_kwargs(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {key: [r[key] for r in rows] for key in ("domain", "verifier", "reference", "id")}


def test_worker_killed_mid_batch_behind_the_reward_bridge(tmp_path: Path) -> None:
    rows = micro.generate("math", 24, seed=0, difficulty=1, split="train")
    golds = [json.loads(r["reference"])["answer"] for r in rows]
    completions = [f"Answer: {g}" if i % 3 else f"Answer: {g}1" for i, g in enumerate(golds)]
    pid_file = tmp_path / "worker.pid"
    marked = dict(rows[0], verifier="killed_once", reference=json.dumps({"pid_file": str(pid_file)}))
    middle = len(rows) // 2
    batch, texts = [*rows[:middle], marked, *rows[middle:]], [*completions]
    texts.insert(middle, "anything")
    expected = build_reward_functions(
        ["math"], sequential_scorer(ReasoningFormat()), ErrorBudget(0.05, 1), StepTimer()
    )[0](["q"] * len(rows), completions, **reward_kwargs(rows))
    assert 0.0 in expected and 1.0 in expected  # the batch holds right and wrong answers

    budget = ErrorBudget(max_rate=0.0, min_samples=1)  # any error verdict would abort
    scorer = build_scorer(ReasoningFormat(), {}, workers=2, timeout_s=30.0)
    (reward,) = build_reward_functions(["math"], scorer, budget, StepTimer())
    killer = kill_when_published(pid_file)
    scores = reward(["q"] * len(batch), texts, **reward_kwargs(batch))
    killer.join(timeout=5)
    assert pid_file.exists(), "the marked row never reached a worker"
    assert scores.pop(middle) == 1.0  # graded again on the replacement worker
    assert scores == expected
    assert budget.errors["math"] == 0 and budget.seen["math"] == len(batch)
    again = reward(["q"] * len(rows), completions, **reward_kwargs(rows))
    assert again == expected  # the bridge's pool keeps working


ROWS_PER_STEP = 8  # 2 prompts x 4 generations
FAULT_EVERY = 8  # math item 0 of every reward batch kills each worker that grades it
POISONED_PER_STEP = -(-ROWS_PER_STEP // FAULT_EVERY)
ABORT_STEP = 2
ABORT_ARGS = [
    "experiment=smoke",
    "logger=none",
    "sft=none",
    "mixture.train_size=32",
    "mixture.heldout_size=0",
    "algo.num_generations=4",
    "algo.prompts_per_step=2",
    "trainer.max_steps=3",
    "trainer.save_steps=1",
    "trainer.verifier_workers=2",
    # the budget decides after two steps: step 1's errors are counted and logged, step 2 aborts
    f"trainer.infra_error_min_samples={ABORT_STEP * ROWS_PER_STEP}",
]


@pytest.mark.slow
def test_grpo_aborts_on_verifier_infra_errors_and_resumes_after_the_fix(
    tmp_path, rlvr_cache, sft_checkpoint, monkeypatch
):
    args = [*ABORT_ARGS, f"init_from={sft_checkpoint}"]
    monkeypatch.setenv(FAULT_ENV, f"math:{FAULT_EVERY}")
    aborted = run_cli(args, tmp_path, rlvr_cache)
    monkeypatch.delenv(FAULT_ENV)

    errors, seen = ABORT_STEP * POISONED_PER_STEP, ABORT_STEP * ROWS_PER_STEP
    reason = (
        f"math: {errors}/{seen} verifications failed inside the verifier "
        f"(rate {errors / seen:.1%} > trainer.max_infra_error_rate=0.05)"
    )
    assert aborted.returncode != 0
    assert reason in aborted.stderr, aborted.stderr[-3000:]
    run = only_run_dir(tmp_path)
    (run_log,) = run.glob("*.log")
    log_text = run_log.read_text()
    assert reason in log_text
    assert f"verifier worker died on this item {MAX_ITEM_ATTEMPTS} times" in log_text
    assert not (run / "final").exists() and not (run / "summary.json").exists()
    # what stays: every finished step's checkpoint and metrics; the failures were counted as
    # verifier errors, not scored as wrong answers
    checkpoints = run / "checkpoints"
    assert latest_complete_checkpoint(checkpoints) == checkpoints / f"checkpoint-{ABORT_STEP - 1}"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "math/verifier_error_rate" in m]
    assert [m["step"] for m in steps] == list(range(1, ABORT_STEP))
    assert steps[0]["math/verifier_error_rate"] == POISONED_PER_STEP / ROWS_PER_STEP
    assert steps[0]["math/count"] == ROWS_PER_STEP

    resumed = run_cli([*args, "resume=true"], tmp_path, rlvr_cache)  # the fault is gone
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert only_run_dir(tmp_path) == run
    assert is_complete(checkpoints / "checkpoint-3") and (run / "final" / "config.json").exists()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rl"]["steps"] == 3 and summary["rl"]["infra_errors"] == {"math": 0}
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    later = [m for m in metrics if "math/verifier_error_rate" in m and m["step"] >= ABORT_STEP]
    assert [m["step"] for m in later] == [2, 3]  # continued from checkpoint-1, not from 0
    assert all(m["math/verifier_error_rate"] == 0.0 for m in later)
