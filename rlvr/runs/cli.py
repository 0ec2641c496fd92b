"""Hydra plumbing shared by the entry points: config path, resolvers, typed conversion."""

from __future__ import annotations

import hashlib
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
from rlvr.runs.memory import keep_freed_memory

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")  # ships in the wheel (rlvr/conf)
log = logging.getLogger("rlvr")


# Overrides whose values are paths: a folder name shows a short hash of them, never the path.
PATH_KEYS = frozenset(
    {
        "init_from",
        "merge.base",
        "merge.models",
        "merge.out_dir",
        "eval.models",
        "eval.out_dir",
        "report.study_dir",
        "study.out_dir",
        "study.sft_model",
        "paths.data_dir",
        "paths.cache_dir",
    }
)


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", "./", "../", "~"))


def run_dirname(overrides: Any, exclude: Any = ()) -> str:
    """A filesystem-safe run folder name from the overrides that identify a run ("base" when
    none): ``domains=math,trainer.seed=1``. Path-valued overrides appear as ``key@<hash>`` so
    no path leaks into a folder name; a name too long for the file system is cut and hashed.

    ``overrides``: Hydra's task overrides (a list) or an ``override_dirname`` string.
    """
    if isinstance(overrides, str):
        overrides = [o for o in re.split(r",(?![^\[]*\])", overrides) if o]
    skip = set(exclude or ())
    items = []
    for override in overrides:
        key, _, value = str(override).partition("=")
        key = key.lstrip("+~")
        if key in skip or key.startswith("hydra"):
            continue
        value = re.sub(r"[\[\]'\" ]", "", value)
        if key in PATH_KEYS or _looks_like_path(value):
            items.append(f"{key}@{hashlib.sha256(value.encode()).hexdigest()[:8]}")
        else:
            items.append(f"{key}={value}".replace("/", "_"))
    name = ",".join(sorted(items))
    if len(name) > 120:  # cut for readability and the file-name limit; distinct runs stay distinct
        name = f"{name[:107]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name or "base"


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("rlvr_dirname"):
        OmegaConf.register_new_resolver("rlvr_dirname", run_dirname)


def _option_names(value: Any) -> list[str]:
    """Option names inside an override value: a name, a list of names, or a choice sweep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [n for v in value for n in _option_names(v)]
    return [n for v in getattr(value, "list", None) or [] for n in _option_names(v)]


def is_searchpath(arg: str) -> bool:
    """Whether a command-line argument sets ``hydra.searchpath`` (the user's config folders)."""
    return arg.split("=", 1)[0].lstrip("+") == "hydra.searchpath"


def config_dirs(argv: list[str], conf_dir: str = CONF_DIR) -> list[Path]:
    """The config folders a command line composes from: ours, then the user's folders that a
    ``hydra.searchpath=[file://...]`` override adds (``pkg://`` entries are not folders here)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    dirs = [Path(conf_dir)]
    search = [a for a in argv if is_searchpath(a)]
    for override in OverridesParser.create().parse_overrides(search):
        value = override.value()
        for entry in value if isinstance(value, list) else [value]:
            if isinstance(entry, str) and entry.startswith("file://"):
                dirs.append(Path(entry[len("file://") :]).expanduser())
    return dirs


def check_group_choices(argv: list[str], conf_dir: str = CONF_DIR) -> None:
    """Reject unknown options of our config groups, naming the valid ones; Hydra's own error
    for a list-valued group (``domains=[foo]``) does not list them. Options in user config
    folders (``hydra.searchpath``) count."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        overrides = OverridesParser.create().parse_overrides([a for a in argv if "=" in a])
        dirs = config_dirs(argv, conf_dir)
    except Exception:  # noqa: BLE001  (grammar errors: Hydra reports them itself)
        return
    for o in overrides:
        folders = [d / o.key_or_group for d in dirs if (d / o.key_or_group).is_dir()]
        if o.key_or_group.startswith("hydra") or o.is_delete() or not folders:
            continue
        valid = sorted(
            {f.relative_to(folder).with_suffix("").as_posix() for folder in folders for f in folder.rglob("*.yaml")}
        )
        unknown = [n for n in _option_names(o.value()) if n not in valid]
        if unknown:
            raise ConfigError(
                f"{o.key_or_group}: unknown option(s) {', '.join(unknown)}; "
                f"valid {o.key_or_group}: {', '.join(valid)} (a folder of your own: "
                "hydra.searchpath=[file:///abs/path])"
            )


def configure_threads() -> None:
    """One share of the cores per local process: OpenMP threads oversubscribing the cores
    (several ranks, or verifier workers beside the trainer) slow small models several-fold.

    ``OMP_NUM_THREADS`` (the study sets it per stage) is the share when set. torch is told
    either way: ``torch.set_num_threads`` also turns MKL's dynamic threading off, which changes
    how multi-threaded kernels split their sums (and made the 2-thread SFT about 15% faster),
    so a stage run by hand and the same stage run by the study compute the same numbers."""
    import os

    import torch

    share = os.environ.get("OMP_NUM_THREADS", "")
    if share.isdigit() and int(share) > 0:
        torch.set_num_threads(int(share))
        return
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))


PLANNED = {"rl": "rl", "sft": "sft", "distill": "distill", "eval": "eval"}  # stage -> plan kind


def plan_first(run: RunConfig) -> bool:
    """The stage's resource plan: printed with ``dry_run=true`` (then the stage stops: True);
    a stage that cannot fit ``trainer.device_memory_gib`` fails here, before any model loads."""
    from rlvr.planning import assumptions, check_fits, format_plan, plan_stage, sharded, world_size

    kind = PLANNED.get(run.stage)
    if kind is None:
        if run.dry_run:
            sys.stdout.write(f"{run.stage}: no resource plan (runs on the host); nothing run\n")
        return run.dry_run
    plan = plan_stage(run, run.run_name, kind, world_size(), sharded())
    if run.dry_run:
        sys.stdout.write(format_plan([plan], assumptions(run.trainer)) + "\n")
    check_fits([plan])
    return run.dry_run


def known_failure(err: BaseException) -> str | None:
    """ "config error" for bad setup found once a stage looks at its inputs (a judge built with
    the scorer: unknown backend, endpoint down; still before any model loads), "aborted" when
    the verifier error budget ran out, else None. The verifier and reward classes are looked
    up only where their modules were imported: a stage that never loaded them (a merge, the
    report) cannot raise them, and importing them would cost it the verifiers' start-up."""
    if isinstance(err, ConfigError):
        return "config error"
    judge = sys.modules.get("verifiers.judge.backend")
    if judge is not None and isinstance(err, judge.JudgeSetupError):
        return "config error"
    bridge = sys.modules.get("rlvr.rewards.bridge")
    if bridge is not None and isinstance(err, bridge.VerifierInfrastructureError):
        return "aborted"
    return None


def leave_process_group() -> None:
    """Destroy this process's process group, if one is up, before the interpreter exits. Left
    to the interpreter's teardown, gloo's worker threads can still hold tensors while Python
    finalises, and the process aborts ("terminate called without an active exception") after
    its work is done, failing a finished stage. Stages that never imported torch skip this."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def hydra_entry(stage: str, body: Callable[[RunConfig, Path], Any], config_name: str = "train") -> None:
    """Compose the config, convert it once, run ``body(run, run_dir)``; clean errors on bad input."""
    register_configs()
    register_resolvers()
    try:
        check_group_choices(sys.argv[1:])
    except ConfigError as err:
        log.error("config error: %s", err)
        sys.exit(2)

    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name=config_name)
    def _main(cfg: DictConfig) -> None:
        cfg.stage = stage
        try:
            run = to_config(cfg)
        except ConfigError as err:
            log.error("config error: %s", err)
            sys.exit(2)
        try:
            if plan_first(run):
                return
        except ConfigError as err:
            log.error("config error: %s", err)
            sys.exit(2)
        configure_threads()
        keep_freed_memory()
        try:
            body(run, Path(HydraConfig.get().runtime.output_dir))
        except Exception as err:
            failure = known_failure(err)
            if failure is None:
                raise
            log.error("%s: %s", failure, err)
            if failure == "aborted":  # the error budget ran out: one clear line
                sys.stderr.write(f"aborted: {err}\n")
            sys.exit(2 if failure == "config error" else 1)
        finally:
            leave_process_group()

    _main()
