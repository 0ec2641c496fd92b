"""Run a Hydra-style sweep as one ``accelerate launch`` job per point, in sequence.

python scripts/sweep_accelerate.py --config gpu_fsdp2 experiment=m2rl_rl init_from=/ckpt/sft \
    'domains=[m2rl/math],[m2rl/code],[m2rl/science],[m2rl/instruction],[m2rl/agent]'
python scripts/sweep_accelerate.py --config cpu_fsdp2 --dry-run domains=[math],[code] algo=grpo,dapo

Hydra's ``-m`` would start every point inside one process group; multi-process training needs
a fresh ``accelerate launch`` per point instead. Sweep overrides (``a,b``, ``[x],[y]``,
``range(0,3)``, ``choice(...)``) expand to their cartesian product, in the order given; every
point runs ``accelerate launch --config_file conf/accelerate/<config>.yaml -m <entry> <point>``
and lands in the same run folder ``python -m <entry> <point>`` would use.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ACCELERATE_DIR = REPO / "conf" / "accelerate"

log = logging.getLogger("sweep_accelerate")


class SweepError(ValueError):
    """Arguments that cannot make a sweep; the message says what to change."""


def expand(overrides: list[str]) -> list[list[str]]:
    """The sweep points: each a list of ``key=value`` overrides, cartesian product in order."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if "-m" in overrides or "--multirun" in overrides:
        raise SweepError("drop -m/--multirun: this script is the sweeper")
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as err:  # noqa: BLE001  (Hydra's parser raises several types)
        raise SweepError(f"cannot parse overrides: {err}") from err
    axes = []
    for o in parsed:
        key = o.get_key_element()
        if o.is_sweep_override():
            axes.append([f"{key}={v}" for v in o.sweep_string_iterator()])
        elif o.is_delete() and o.value() is None:
            axes.append([key])
        else:
            axes.append([f"{key}={o.get_value_element_as_str()}"])
    return [list(point) for point in itertools.product(*axes)]


def config_file(name: str) -> Path:
    path = ACCELERATE_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in ACCELERATE_DIR.glob("*.yaml"))
        raise SweepError(f"no accelerate config {name!r}; known: {', '.join(known)}")
    return path


def command(config: Path, entry: str, launch_args: list[str], point: list[str]) -> list[str]:
    shown = os.path.relpath(config) if config.is_relative_to(Path.cwd()) else str(config)
    return ["accelerate", "launch", "--config_file", shown, *launch_args, "-m", entry, *point]


def accelerate_executable() -> str:
    """The ``accelerate`` of this interpreter's environment, else the one on PATH."""
    local = Path(sys.executable).parent / "accelerate"
    return str(local) if local.exists() else (shutil.which("accelerate") or "accelerate")


def run_all(commands: list[list[str]], keep_going: bool) -> list[int]:
    """Run each command to completion; returns the indices of the points that failed."""
    failed = []
    for i, cmd in enumerate(commands, 1):
        log.info("point %d/%d: %s", i, len(commands), shlex.join(cmd))
        code = subprocess.run([accelerate_executable(), *cmd[1:]], check=False).returncode
        if code:
            log.error("point %d/%d failed with exit status %d", i, len(commands), code)
            failed.append(i)
            if not keep_going:
                break
    return failed


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="conf/accelerate/<config>.yaml")
    p.add_argument("--entry", default="rlvr.train", help="module to launch (rlvr.train, rlvr.sft)")
    p.add_argument("--launch-args", default="", help='extra accelerate flags, e.g. "--num_processes 4"')
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--keep-going", action="store_true", help="run the other points after a failure")
    p.add_argument("overrides", nargs="*", help="Hydra overrides; sweeps as in python -m ... -m")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    try:
        config = config_file(args.config)
        points = expand(args.overrides)
    except SweepError as err:
        log.error("%s", err)
        return 2
    launch_args = shlex.split(args.launch_args)
    commands = [command(config, args.entry, launch_args, point) for point in points]
    if args.dry_run:
        sys.stdout.write("".join(shlex.join(cmd) + "\n" for cmd in commands))
        return 0
    failed = run_all(commands, args.keep_going)
    log.info(
        "%d of %d points finished; failed: %s",
        len(commands) - len(failed),
        len(commands),
        failed or "none",
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
