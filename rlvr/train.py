"""GRPO stage: optional SFT warm start, then TRL GRPO over the selected domains.

python -m rlvr.train experiment=smoke
python -m rlvr.train -m domains=[math],[code],[science],[instruction],[agent] experiment=tiny_rl
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def train(run: RunConfig, run_dir: Path) -> dict:
    """The whole stage as a recipe; returns the summary written to ``summary.json``."""
    from rlvr.runs.folders import configure_tracking, prepare_run_dir
    from rlvr.training import stages

    started = time.perf_counter()
    prepare_run_dir(run, run_dir)
    configure_tracking(run, run_dir)
    data = stages.training_data(run)  # a domain without rows stops the stage here
    scorer = stages.make_scorer(run)  # a bad judge or sandbox setup stops here, before any model
    base_path = stages.starting_model(run)

    evals: dict = {}
    evaluate = stages.heldout_eval if run.eval.in_run else stages.no_eval  # a study evaluates later
    start_path, sft_seconds = base_path, 0.0
    if stages.wants_warm_start(run):
        evals["base"] = evaluate(run, base_path, data, scorer)
        start_path, sft_seconds = stages.warm_start(run, base_path, run_dir / "sft")
    evals["start" if run.init_from else "sft"] = evaluate(run, start_path, data, scorer)

    final_path, rl = stages.grpo(run, start_path, data, scorer, run_dir)
    evals["rl"] = evaluate(run, final_path, data, scorer)

    summary = stages.summarise(run, run_dir, evals, rl, sft_seconds, time.perf_counter() - started)
    stages.report(summary)
    return summary


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("rl", train)


if __name__ == "__main__":
    main()
