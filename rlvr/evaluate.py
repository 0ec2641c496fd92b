"""Evaluate any models on any benchmarks: k samples per prompt, Avg@k, pass@k, greedy, resumable.

python -m rlvr.evaluate 'eval.models=["sft=outputs/s/sft","math=outputs/s/math"]' \
    'eval.tasks=[gsm8k,micro_math]' eval.k=4 eval.max_prompts=50

Writes ``<study>/eval/<label>/<benchmark>.jsonl`` (one line per sample) and ``.json`` (the
summary); a benchmark whose summary exists is not recomputed, and one cut short (a time-out, a
kill) resumes at its first unwritten shard of ``eval.shard_prompts`` prompts. A model never
trained to think (a base model) is graded without the ``</think>`` gate with
``eval.format_gate=false``; the summary records the gate. The work is
``rlvr.evaluation.evaluator.evaluate``.
"""

from __future__ import annotations


def main() -> None:
    from rlvr.evaluation.evaluator import evaluate
    from rlvr.runs.cli import hydra_entry

    hydra_entry("eval", evaluate)


if __name__ == "__main__":
    main()
