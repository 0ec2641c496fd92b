"""Evaluate any models on any benchmarks: k samples per prompt, Avg@k, pass@k, greedy, resumable.

python -m rlvr.evaluate 'eval.models=["sft=outputs/s/sft","math=outputs/s/math"]' \
    'eval.tasks=[gsm8k,micro_math]' eval.k=4 eval.max_prompts=50

Writes ``<study>/eval/<label>/<benchmark>.jsonl`` (one line per sample) and ``.json`` (the
summary); a benchmark whose summary exists is not recomputed, and one cut short (a time-out, a
kill) resumes at its first unwritten shard of ``eval.shard_prompts`` prompts. A model never
trained to think (a base model) is graded without the ``</think>`` gate with
``eval.format_gate=false``; the summary records the gate. The work is
``rlvr.evaluation.evaluator.evaluate``; with ``logger=wandb`` the scores and a sample of the
records go to the stage's W&B run (``rlvr.tracking.evaluation_log``).
"""

from __future__ import annotations

from pathlib import Path

from rlvr.config import RunConfig


def evaluate_stage(run: RunConfig, run_dir: Path) -> Path:
    """Evaluate every model on every benchmark, then log what was written; the study folder."""
    from rlvr.evaluation.evaluator import evaluate
    from rlvr.tracking.evaluation_log import log_evaluation

    study = evaluate(run, run_dir)
    log_evaluation(run, run_dir, study)
    return study


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("eval", evaluate_stage)


if __name__ == "__main__":
    main()
