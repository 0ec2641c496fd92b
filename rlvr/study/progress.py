"""What a person watches: one live line per stage, and the closing screen of the study.

On a terminal the block of lines is redrawn in place; elsewhere (a log file, CI) a line is
printed whenever a stage changes state, plus the running stages' progress once a minute.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from rlvr.study.manifest import MANIFEST, log_path
from rlvr.study.plan import Stage


def last_step(path: Path | None) -> int | None:
    """The newest ``step`` in a metrics.jsonl (the stage's own progress record)."""
    if path is None or not path.is_file():
        return None
    for line in reversed(path.read_text().splitlines()):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def stage_detail(stage: Stage) -> str:
    if stage.progress_file is not None and stage.total_steps:
        step = last_step(stage.progress_file)
        return f"step {step or 0}/{stage.total_steps}"
    if stage.kind == "eval":
        done = sum(p.is_file() for p in stage.outputs)
        return f"benchmark {done}/{len(stage.outputs)}"
    return ""


class Progress:
    def __init__(self, stages: Sequence[Stage], out: TextIO | None = None, every_s: float = 60):
        self.stages = list(stages)
        self.out = out or sys.stdout
        self.tty = self.out.isatty()
        self.every_s = every_s
        self.drawn = 0
        self.last: dict[str, str] = {}
        self.last_heartbeat = time.time()
        self.began = time.time()
        self.ended: dict[str, float] = {}

    def _line(self, stage: Stage, status: str, since: float | None) -> str:
        elapsed = f"{time.time() - since:7.0f}s" if since else " " * 8
        detail = stage_detail(stage) if status == "running" else ""
        return f"  {status:<8} {elapsed}  {stage.name:<28} {detail}".rstrip()

    def render(self, status: Mapping[str, str], running: Mapping[str, float], final: bool = False) -> None:
        if self.tty:
            lines = [self._line(s, status[s.name], running.get(s.name)) for s in self.stages]
            head = f"study: {time.time() - self.began:.0f} s"
            if self.drawn:
                self.out.write(f"\x1b[{self.drawn}F")
            self.out.write("\n".join(f"\x1b[2K{line}" for line in [head, *lines]) + "\n")
            self.drawn = len(lines) + 1
        else:
            for s in self.stages:
                if self.last.get(s.name) != status[s.name]:
                    self.out.write(self._line(s, status[s.name], running.get(s.name)) + "\n")
            beat = time.time() - self.last_heartbeat >= self.every_s
            if running and (beat or final):
                self.last_heartbeat = time.time()
                active = [s for s in self.stages if s.name in running]
                self.out.write(
                    "  ... "
                    + "; ".join(
                        f"{s.name} {time.time() - running[s.name]:.0f}s {stage_detail(s)}".rstrip() for s in active
                    )
                    + "\n"
                )
        self.last = dict(status)
        self.out.flush()


def print_plan(
    stages: Sequence[Stage],
    commands: Mapping[str, list[str]],
    out: TextIO,
    machines: Mapping[str, int] | None = None,
) -> None:
    """``study.dry_run=true``: one line per stage with its dependencies and command (a stage
    on several nodes: the command node <k> runs)."""
    import shlex

    out.write(f"{len(stages)} stages\n")
    for s in stages:
        deps = ",".join(s.deps) or "-"
        nodes = (machines or {}).get(s.name, 1)
        where = f" on {nodes} nodes, node <k> = 0..{nodes - 1} runs" if nodes > 1 else ""
        out.write(f"{s.name:<28} after {deps}{where}\n    {shlex.join(commands[s.name])}\n")


def print_folder_preview(
    root: Path,
    stages: Sequence[Stage],
    reuse: Sequence[str],
    stale: Mapping[str, str],
    out: TextIO,
) -> None:
    """A dry run on a folder that holds outputs: what a run would reuse, rerun (and why; a
    rerun replaces the stage's outputs) and run for the first time."""
    new = len(stages) - len(reuse) - len(stale)
    out.write(f"in {root}: {len(reuse)} stages reused, {len(stale)} rerun, {new} to run\n")
    for name, why in stale.items():
        out.write(f"  rerun {name}: {why}\n")


def _cost_ratio(report: Path) -> str | None:
    path = report / "cost_table.csv"
    if not path.is_file():
        return None
    for row in csv.reader(path.open()):
        if row and row[0] == "mixed / separate" and len(row) > 2 and row[2]:
            return f"{float(row[2]):.3f}"
    return None


def closing_screen(root: Path, stages: Sequence[Stage], status: Mapping[str, str], entries: Mapping[str, dict]) -> str:
    """The report's main table, the mixed/separate cost ratio, failures, and where files are."""
    lines: list[str] = []
    report = root / "report"
    main = report / "main_table.md"
    if main.is_file():
        lines += [main.read_text().rstrip(), ""]
    if (ratio := _cost_ratio(report)) is not None:
        lines.append(f"mixed / separate compute (device-seconds): {ratio}")
    for s in stages:
        if status.get(s.name) == "failed":
            entry = entries.get(s.name, {})
            if entry.get("error"):
                lines.append(f"FAILED {s.name}: {entry['error']}")
                continue
            log = log_path(root, s.name)
            tail = log.read_text(errors="replace").splitlines()[-8:] if log.is_file() else []
            job = entry.get("job_id")
            cluster = f"SLURM job {job} {entry['slurm_state']}, " if entry.get("slurm_state") else ""
            lines.append(f"FAILED {s.name} ({cluster}exit status {entry.get('returncode')}); log: {log}")
            lines += ["    " + t for t in tail]
            if cluster and (job_log := root / ".submitit" / str(job) / f"{job}_0_log.err").is_file():
                lines.append(f"    the job's own log (submitit, SLURM): {job_log}")
    if blocked := [s.name for s in stages if status.get(s.name) == "blocked"]:
        lines.append(f"not run (an input stage failed): {', '.join(blocked)}")
    counts = {k: sum(v == k for v in status.values()) for k in dict.fromkeys(status.values())}
    lines += [
        "",
        "stages: " + ", ".join(f"{n} {k}" for k, n in counts.items()),
        f"study folder  {root}",
        f"  manifest    {root / MANIFEST}",
        f"  logs        {root / 'logs'}/<stage>.log",
        f"  models      {root}/{{sft,experts,mixed,merges}}/",
        f"  evaluation  {root / 'eval'}/<model>/<benchmark>.{{json,jsonl}}",
        f"  report      {report}/ (main, merge, diff, cost tables as .md and .csv; plots)",
    ]
    return "\n".join(lines)
