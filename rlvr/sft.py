"""SFT stage (TRL SFTTrainer): the shared starting checkpoint of every RL run.

python -m rlvr.sft experiment=tiny_sft
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def sft_stage(run: RunConfig, run_dir: Path) -> dict:
    """SFT as a stage of its own: base model -> ``<run_dir>/final``, held-out before and after."""
    from rlvr.runs.folders import (
        configure_tracking,
        device_seconds,
        is_main_process,
        prepare_run_dir,
        write_json,
    )
    from rlvr.tracking.wandb_run import open_stage_run
    from rlvr.training import stages
    from rlvr.training.sft import run_sft

    started = time.perf_counter()
    prepare_run_dir(run, run_dir)
    configure_tracking(run, run_dir)
    base = stages.starting_model(run)
    data = stages.domain_data(run)
    scorer = stages.make_scorer(run)
    evaluate = stages.heldout_eval if run.eval.in_run else stages.no_eval  # a study evaluates later
    evals = {"base": evaluate(run, base, data, scorer)}
    final, seconds = run_sft(run, base, run_dir, open_stage_run(run, run_dir, "sft"))
    evals["sft"] = evaluate(run, str(final), data, scorer)
    summary = {
        "experiment": run.experiment,
        "run_name": run.run_name,
        "run_dir": str(run_dir.resolve()),
        "final": str(final.resolve()),
        "domains": sorted(run.domains),
        "heldout": evals,
        "sft_seconds": seconds,
        "compute": device_seconds(time.perf_counter() - started),
    }
    if is_main_process():
        write_json(run_dir / "summary.json", summary)
        for stage, per_domain in evals.items():
            for domain, m in sorted(per_domain.items()):
                log.info(
                    "%-5s %-12s avg@k %.3f  greedy %.3f",
                    stage,
                    domain,
                    m["avg_at_k"],
                    m.get("greedy_accuracy", float("nan")),
                )
        log.info("SFT model: %s (%.1f s)", final, seconds)
    return summary


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("sft", sft_stage)


if __name__ == "__main__":
    main()
