"""``python -m rlvr.study.prefetch experiment=m2rl_study``: fetch what a study reads from the Hub.

Composes the study exactly as ``python -m rlvr.study`` does (same arguments), lists every
Hub model (with its tokenizer) and dataset its stages name, and downloads those missing from
the Hub cache (``HF_HOME``) on a machine with network, so the stages can run on compute nodes
with ``HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1``. ``--list`` only lists what is missing.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from hydra.errors import HydraException

from rlvr.config import ConfigError
from rlvr.study import offline
from rlvr.study.commands import stage_config, user_overrides
from rlvr.study.plan import build_plan
from rlvr.study.study_config import load_study

log = logging.getLogger("rlvr.study.prefetch")


def study_items(argv: Sequence[str]) -> list[offline.HubItem]:
    """Every Hub model and dataset the study composed from ``argv`` names."""
    run = load_study(list(argv))
    base = user_overrides(argv)
    return offline.hub_items((s.kind, stage_config(base, s)) for s in build_plan(run))


def prefetch(argv: Sequence[str], list_only: bool = False) -> int:
    items = study_items(argv)
    todo = offline.missing(items)
    sys.stdout.write(
        f"{len(items)} Hub repositories named by the study, {len(todo)} missing from the cache\n"
        + "".join(f"  {item}\n" for item in todo)
    )
    if list_only or not todo:
        return 0
    if offline.offline_env(os.environ):
        raise ConfigError(
            "HF_HUB_OFFLINE=1: could not fetch "
            + ", ".join(str(i) for i in todo)
            + "; run rlvr.study.prefetch where the Hub is reachable, without HF_HUB_OFFLINE"
        )
    if failed := offline.fetch(todo):
        raise ConfigError("could not fetch:\n  " + "\n  ".join(failed))
    sys.stdout.write(f"fetched {len(todo)} into the Hub cache; the stages can run offline\n")
    return 0


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="[%(name)s][%(levelname)s] - %(message)s")
    argv = sys.argv[1:]
    list_only = "--list" in argv
    try:
        code = prefetch([a for a in argv if a != "--list"], list_only)
    except (ConfigError, HydraException) as err:
        log.error("%s", err)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
