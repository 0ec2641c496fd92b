"""A stage's W&B run: opened under its lifelong identity, resumed where it exists, logged on the
trainer's global step.

Replaces transformers' ``WandbCallback`` for the training stages (``report_to`` stays empty): that
callback opens a new run on every start and logs on W&B's own counter, so a resumed stage would
show as a second run, or as one run whose curve repeats the steps after its last checkpoint. Here
a resumed stage appends to its run, and a step at or below the last one the run holds (replayed
after a checkpoint) is not logged again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.tracking.identity import RunIdentity, SweepPoint, identity

log = logging.getLogger(__name__)


class StageRun:
    """One W&B run, rank 0 only; ``log`` takes the global step the values belong to."""

    def __init__(self, wandb_run: Any, ident: RunIdentity, last_step: int = -1) -> None:
        self.wb = wandb_run
        self.identity = ident
        self.last_step = last_step  # the highest step the run already holds

    def log(self, values: Mapping[str, Any], step: int) -> bool:
        """Log ``values`` at ``step``; False (nothing logged) for a step the run already holds."""
        if step <= self.last_step:
            return False
        scalars = {_train_key(k): v for k, v in values.items() if v is not None and k != "step"}
        self.wb.log({**scalars, "train/global_step": step}, step=step)
        self.last_step = step
        return True

    def summarise(self, values: Mapping[str, Any]) -> None:
        for key, value in values.items():
            self.wb.summary[key] = value

    def table(self, key: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        import wandb

        self.wb.log({key: wandb.Table(columns=list(columns), data=[list(r) for r in rows])})

    def images(self, paths: Mapping[str, Path]) -> None:
        import wandb

        self.wb.log({key: wandb.Image(str(path)) for key, path in paths.items()})

    def finish(self) -> None:
        self.wb.finish()


def _train_key(key: str) -> str:
    """DESIGN's names: ``train/<domain>/...``, ``train/time/...``; TRL's ``eval_x`` as ``eval/x``."""
    if key.startswith("eval_"):
        return "eval/" + key[len("eval_") :]
    return key if key.startswith(("train/", "eval/")) else "train/" + key


def tracking_enabled(run: RunConfig) -> bool:
    """``logger=wandb``, unless the logger's mode or the environment (tests) disables it."""
    off = "disabled" in (run.logger.mode, os.environ.get("WANDB_MODE"))
    return run.logger.name == "wandb" and not off


def wandb_mode(run: RunConfig) -> str:
    """The environment's ``WANDB_MODE`` where set (``configure_tracking`` sets it for training
    stages), else the logger's; online without ``WANDB_API_KEY`` logs offline instead."""
    mode = os.environ.get("WANDB_MODE") or run.logger.mode
    if mode == "online" and not os.environ.get("WANDB_API_KEY"):
        log.warning("logger.mode=online but WANDB_API_KEY is unset: logging offline instead")
        return "offline"
    return mode


def open_stage_run(
    run: RunConfig, run_dir: Path, verb: str, config: Mapping[str, Any] | None = None
) -> StageRun | None:
    """The stage's run (None where W&B is off or on ranks other than 0), created or resumed.

    ``config``: what to record beside the resolved config (e.g. the stage's hash).
    """
    from rlvr.runs.folders import is_main_process

    if not tracking_enabled(run) or not is_main_process():
        return None
    import wandb
    from omegaconf import OmegaConf

    ident = identity(run, run_dir, verb, sweep_point())
    resolved = OmegaConf.to_container(OmegaConf.structured(run), resolve=True)
    wb = wandb.init(
        project=run.logger.project,
        entity=run.logger.entity or None,
        id=ident.id,
        resume="allow",
        name=ident.name,
        group=ident.group,
        job_type=ident.job_type,
        tags=list(ident.tags),
        config={"rlvr": resolved, **(config or {})},
        dir=str(run_dir),
        mode=wandb_mode(run),
        reinit="finish_previous",
    )
    last = max(_held_online(wb), _logged_offline(run_dir, ident.id, Path(wb.dir).parent))
    log.info("W&B run %s (%s), group %s, after step %d", ident.name, ident.id, ident.group, last)
    return StageRun(wb, ident, last)


def _held_online(wb: Any) -> int:
    """The last step a resumed online run holds, from its summary (-1 for a new run)."""
    held = wb.summary.get("train/global_step") if wb.resumed else None
    return int(held) if isinstance(held, (int, float)) else -1


def _logged_offline(run_dir: Path, run_id: str, current: Path) -> int:
    """The last step earlier offline segments of this run logged in ``run_dir`` (-1 for none):
    offline, W&B cannot tell a resumed run from a new one; ``wandb sync`` joins the segments."""
    from rlvr.tracking.readback import TransactionLogError, read_run

    last = -1
    for path in Path(run_dir).glob(f"wandb/*/run-{run_id}.wandb"):
        if path.parent.resolve() == current.resolve():
            continue
        try:
            steps = read_run(path).steps()
        except TransactionLogError as err:  # a damaged segment: its steps are unknown
            log.warning("%s", err)
            continue
        last = max([last, *steps])
    return last


def sweep_point() -> SweepPoint | None:
    """The Hydra multirun this process is a point of (None outside a sweep): its folder, and the
    point's name from the overrides the sweep varies (``trainer.seed=1``), so runs read apart in
    the UI where the run folder's name is cut to a digest."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return None
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    folder = Path(hc.sweep.dir)
    return SweepPoint(folder, _swept_values(folder, list(hc.overrides.task)))


def _swept_values(sweep_dir: Path, point_overrides: list[str]) -> str:
    """``key=value`` of this point for every key the sweep's command line varies (read from the
    sweep's ``multirun.yaml``); empty where that record is missing or unreadable."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    parser = OverridesParser.create()
    try:
        record = OmegaConf.load(sweep_dir / "multirun.yaml")
        swept = {
            o.key_or_group for o in parser.parse_overrides(list(record.hydra.overrides.task)) if o.is_sweep_override()
        }
    except Exception as err:  # noqa: BLE001 - a missing or foreign record: name by the folder
        log.debug("sweep record unreadable (%s): runs named by their folders", err)
        return ""
    points = [o for o in parser.parse_overrides(point_overrides) if o.key_or_group in swept]
    return ",".join(f"{o.key_or_group}={o.value()}" for o in points)
