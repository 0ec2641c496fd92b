"""Print where a finished study's time went, stage by stage (Markdown table).

    python scripts/profile_study.py outputs/tiny_study            # one seed (0) and shared stages
    python scripts/profile_study.py outputs/tiny_study --seed all # every stage

Stage-seconds add up the stages' own walls (two at a time locally, so the study's elapsed
time is about half); below the table, the time some stage was running, and the stages' CPU
seconds against what ``study.jobs`` cores could have done in it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rlvr.study.manifest import MANIFEST, read_json
from rlvr.study.profile import format_profile, one_seed, profile


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """The union of the stages' (start, end) spans, sorted: a folder built over several runs
    counts its stages' time, not the days between the runs."""
    total, (lo, hi) = 0.0, spans[0]
    for start, end in spans[1:]:
        if start > hi:
            total, lo = total + hi - lo, start
        hi = max(hi, end)
    return total + hi - lo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    parser.add_argument("--seed", default="0", help="a seed, or 'all'")
    args = parser.parse_args()
    try:
        stages = profile(args.study_dir)
    except FileNotFoundError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    shown = stages if args.seed == "all" else one_seed(stages, int(args.seed))
    print(format_profile(shown))
    manifest = read_json(args.study_dir / MANIFEST) or {}
    spans = sorted(
        (e["start"], e["end"])
        for e in manifest.get("stages", {}).values()
        if e.get("start") is not None and e.get("end") is not None
    )
    if spans:
        busy = busy_seconds(spans)
        print(f"\nbusy (some stage running, every seed): {busy:,.0f} s")
        cpu = sum(p.cpu_s for p in stages if p.cpu_s is not None)
        jobs = (manifest.get("plan") or {}).get("jobs")
        if cpu and jobs:  # near 100%: the study waits on work, not on its schedule
            print(
                f"CPU (every stage, every seed): {cpu:,.0f} s, {cpu / (busy * jobs):.0%} of "
                f"study.jobs ({jobs}) x the busy time"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
