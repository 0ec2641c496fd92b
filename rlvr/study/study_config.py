"""The study's own config from its command line: composed, named and checked (each stage's
config is composed separately, from the same overrides, by ``rlvr.study.commands``)."""

from __future__ import annotations

from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig, validate
from rlvr.runs.cli import check_group_choices
from rlvr.study.commands import compose


def load_study(argv: list[str]) -> RunConfig:
    """The study config ``argv`` composes; a command without ``experiment=`` is told how to
    name one."""
    check_group_choices(argv)
    if not any(a.split("=", 1)[0].lstrip("+") == "experiment" for a in argv):
        raise ConfigError(
            "name the study: python -m rlvr.study experiment=tiny_study (the embedded model) "
            "or experiment=m2rl_study (GPU clusters); add study.dry_run=true to see the plan"
        )
    run: RunConfig = OmegaConf.to_object(compose([*argv, "run_name=study"]))  # type: ignore[assignment]
    validate(run, check_paths=False)
    return run
