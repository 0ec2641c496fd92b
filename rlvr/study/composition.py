"""Hydra composition of many stage configs: the config groups once, the values per stage.

A study composes one config per stage (a hundred for the embedded study) and Hydra's compose
costs about 0.2 s each, nearly all of it building the defaults tree and loading the group
files. Stages differ mostly in value overrides (``run_name``, paths, seeds) and share a few
group choices (``experiment``, ``domains``, ``merge``), so the groups are composed once per
distinct choice and each stage's values are applied to a copy, in the order given, by the
function Hydra applies them with after its own composition: the same config, error for error.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig


def compose(overrides: Sequence[str], config_name: str = "train") -> DictConfig:
    """The root config with ``overrides`` as Hydra composes it: ``hydra.*`` overrides are
    dropped, but for ``hydra.searchpath`` (user config folders), which chooses what the groups
    hold."""
    from rlvr.runs.cli import is_searchpath

    search = [o for o in overrides if is_searchpath(o)]
    plain = [o for o in overrides if not o.split("=", 1)[0].lstrip("+~").startswith("hydra.")]
    apply = _value_applier()
    if apply is None:  # a Hydra without the function: compose everything at once
        return _hydra_compose(config_name, (*search, *plain))
    groups: list[str] = [*search]
    values: list[str] = []
    for override in plain:
        (groups if names_group(override) else values).append(override)
    cfg = copy.deepcopy(_groups_composed(config_name, tuple(groups)))
    if values:
        apply(cfg, values)
    return cfg


def names_group(override: str) -> bool:
    """Whether an override chooses a config group (a folder of the config tree: ``domains=``,
    ``+experiment=``, ``~merge``) rather than setting a value (``trainer.seed=1``)."""
    from rlvr.runs.cli import CONF_DIR

    key = override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]
    return bool(key) and (Path(CONF_DIR) / key).is_dir()


@functools.lru_cache(maxsize=64)
def _groups_composed(config_name: str, groups: tuple[str, ...]) -> DictConfig:
    return _hydra_compose(config_name, groups)


def _hydra_compose(config_name: str, overrides: tuple[str, ...]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from rlvr.config import register_configs
    from rlvr.runs.cli import CONF_DIR, register_resolvers

    register_configs()
    register_resolvers()
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return hydra_compose(config_name=config_name, overrides=list(overrides))


@functools.cache
def _value_applier():
    """``apply(cfg, overrides)`` with Hydra's own parser and override semantics (``+key``,
    ``++key``, ``~key``, struct mode), or None where this Hydra lacks them."""
    try:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra.core.override_parser.overrides_parser import OverridesParser
    except ImportError:
        return None
    apply_parsed = getattr(ConfigLoaderImpl, "_apply_overrides_to_config", None)
    if apply_parsed is None:
        return None

    def apply(cfg: DictConfig, overrides: list[str]) -> None:
        apply_parsed(OverridesParser.create().parse_overrides(overrides), cfg)

    return apply
