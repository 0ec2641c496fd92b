"""Benchmark the study's planning: every stage config composed once per group choice against
Hydra's full composition of each.

python scripts/bench_plan.py                      # experiment=tiny_study, 2 rounds
python scripts/bench_plan.py --experiment m2rl_study --rounds 3

A study composes one config per stage (101 for the embedded study) before anything runs, on
the critical path of ``make study`` and of every dry run. Composes all of them both ways
(``rlvr.study.composition``: the groups once per distinct choice, the values applied per
stage; and Hydra's ``compose`` per stage), checks the configs are equal, and prints the best
wall of each and their ratio, then the wall of the whole ``plan()`` (hashes and the resource
plan included).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="tiny_study")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from omegaconf import OmegaConf

    from rlvr.study import commands, composition
    from rlvr.study.__main__ import load_study, plan
    from rlvr.study.plan import build_plan

    argv = [f"experiment={args.experiment}"]
    base = commands.user_overrides(argv)
    overrides = [commands.stage_overrides(base, s) for s in build_plan(load_study(argv))]

    def full():
        plain = ([o for o in ov if not o.startswith("hydra.")] for ov in overrides)
        return [composition._hydra_compose("train", tuple(p)) for p in plain]

    def once_per_groups():
        composition._groups_composed.cache_clear()
        return [composition.compose(ov) for ov in overrides]

    best = {}
    for name, run in (("hydra per stage", full), ("groups once", once_per_groups)):
        walls = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            configs = run()
            walls.append(time.perf_counter() - start)
        best[name] = (min(walls), [OmegaConf.to_container(c) for c in configs])
    assert best["hydra per stage"][1] == best["groups once"][1], "configs differ"
    slow, fast = best["hydra per stage"][0], best["groups once"][0]
    print(f"{args.experiment}: {len(overrides)} stage configs, equal both ways")
    print(f"  Hydra's compose per stage  {slow:6.2f} s")
    print(f"  groups once, values each   {fast:6.2f} s   ratio {slow / fast:5.2f}x")
    composition._groups_composed.cache_clear()
    commands._composed.cache_clear()
    start = time.perf_counter()
    plan(argv)
    print(f"  the study's plan()         {time.perf_counter() - start:6.2f} s (hashes, resources)")


if __name__ == "__main__":
    main()
