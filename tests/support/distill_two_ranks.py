"""Two ranks running the MT-OPD stage (``rlvr.distill.distill``) with held-out rows, teachers
sharded by FSDP2 (through ``tests.support.fsdp_on_cpu``): each rank's summary facts and its
peak resident memory handed back.

``accelerate launch ... -m tests.support.fsdp_on_cpu tests.support.distill_two_ranks OUT
[OVERRIDES...]``. Rank 0 writes ``OUT/result.pt``; the test compares the ranks.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from tests.support.two_ranks import finish_rank, save_on_rank0, start_rank


def main(out: str, overrides: list[str]) -> None:
    from rlvr.config import register_configs, to_config
    from rlvr.distill import distill
    from rlvr.runs.cli import CONF_DIR, configure_threads, register_resolvers

    start_rank()
    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["run_name=two-ranks", "stage=distill", *overrides])
    configure_threads()
    summary = distill(to_config(cfg), Path(out) / "run")
    facts = summary["distill"]
    result = {
        "heldout_kl": facts["heldout_kl"],
        "teacher_elements": facts["teacher_elements"],
        "steps": summary["rl"]["steps"],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    save_on_rank0(result, out)
    finish_rank()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
