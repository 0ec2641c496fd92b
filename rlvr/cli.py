"""Hydra plumbing shared by the entry points: config path, resolvers, typed conversion."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from rlvr.config import ConfigError, RunConfig, register_configs, to_config

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")
log = logging.getLogger("rlvr")


def run_dirname(override_dirname: str) -> str:
    """A filesystem-safe run folder name from Hydra's overrides ("base" when none)."""
    name = re.sub(r"[\[\]'\" ]", "", override_dirname).replace("/", "_")
    return name[:180] or "base"


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("rlvr_dirname"):
        OmegaConf.register_new_resolver("rlvr_dirname", run_dirname)


def hydra_entry(
    stage: str, body: Callable[[RunConfig, Path], Any], config_name: str = "train"
) -> None:
    """Compose the config, convert it once, run ``body(run, run_dir)``; clean errors on bad input."""
    register_configs()
    register_resolvers()

    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name=config_name)
    def _main(cfg: DictConfig) -> None:
        cfg.stage = stage
        try:
            run = to_config(cfg)
        except ConfigError as err:
            log.error("config error: %s", err)
            sys.exit(2)
        body(run, Path(HydraConfig.get().runtime.output_dir))

    _main()
