"""Where a finished study's time went: each stage's wall and CPU seconds split into start-up
(imports, Hydra, until the entry point starts its clock), set-up and saves (data, model
loading, checkpoints), and the work itself (generation, grading, the update; sampling for an
evaluation; the merge).

Read from the folder alone: ``study.json`` (wall and CPU seconds per stage), each run's
``summary.json`` and ``metrics.jsonl`` (per-step timings), each evaluation's and merge's
record. Per-step parts are the logged steps' timings times the steps between logs (every step
for GRPO; SFT logs every few dozen, so its split is an estimate).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.study.manifest import MANIFEST, read_json
from rlvr.study.plan import GRPO_KINDS

TRAINING = ("sft", *GRPO_KINDS, "distill")  # stages whose summary.json and metrics.jsonl split
STEP_PARTS = {
    "generation": "time/generation_s",
    "grading": "time/reward_s",
    "teachers": "time/teacher_s",
    "update": "time/update_s",
}
COLUMNS = ("start-up", "set-up & saves", "generation", "grading", "teachers", "update", "sampling", "merge")
_SEED = re.compile(r"-seed(\d+)$")


@dataclass(frozen=True)
class StageProfile:
    name: str
    kind: str
    wall_s: float
    cpu_s: float | None
    parts: dict[str, float] = field(default_factory=dict)  # COLUMNS -> seconds

    @property
    def seed(self) -> int | None:
        found = _SEED.search(self.name)
        return int(found.group(1)) if found else None


def profile(root: Path) -> list[StageProfile]:
    """Every finished stage of the study in ``root``, in plan order."""
    entries = (read_json(root / MANIFEST) or {}).get("stages", {})
    if not entries:
        raise FileNotFoundError(f"{root / MANIFEST} is missing or empty: is this a study folder?")
    out = []
    for name, e in entries.items():
        if e.get("wall_s") is None or e.get("returncode") != 0:
            continue
        inner, parts = _inside(e["kind"], Path(e["out_dir"]))
        if inner is not None:
            parts = {"start-up": max(e["wall_s"] - inner, 0.0), **parts}
        out.append(StageProfile(name, e["kind"], e["wall_s"], e.get("cpu_s"), parts))
    return out


def _inside(kind: str, out_dir: Path) -> tuple[float | None, dict[str, float]]:
    """(seconds the entry point measured itself, its parts) of one stage's outputs."""
    if kind in TRAINING:
        summary = read_json(out_dir / "summary.json") or {}
        inner = summary.get("total_seconds") or summary.get("sft_seconds")
        if inner is None:
            return None, {}
        parts = _step_parts(out_dir / "metrics.jsonl")
        stepping = sum(parts.values())
        return inner, {"set-up & saves": max(inner - stepping, 0.0), **parts}
    if kind == "eval":
        seconds = [(read_json(p) or {}).get("seconds") for p in out_dir.glob("*.json") if p.name != "model.json"]
        found = [s for s in seconds if isinstance(s, (int, float))]
        return (sum(found), {"sampling": sum(found)}) if found else (None, {})
    if kind == "merge":
        seconds = (read_json(out_dir / "merge.json") or {}).get("seconds")
        return (seconds, {"merge": seconds}) if seconds is not None else (None, {})
    return None, {}


def _step_parts(metrics: Path) -> dict[str, float]:
    totals = dict.fromkeys(STEP_PARTS, 0.0)
    previous = 0
    try:
        lines = metrics.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        step = record.get("step")
        if not isinstance(step, int) or "time/step_s" not in record or step <= previous:
            continue
        for part, key in STEP_PARTS.items():
            totals[part] += float(record.get(key, 0.0)) * (step - previous)
        previous = step
    return {k: v for k, v in totals.items() if v > 0}


def one_seed(profiles: Iterable[StageProfile], seed: int) -> list[StageProfile]:
    """The stages one seed runs: its own and those every seed shares (SFT, base evaluation,
    analyses, report)."""
    return [p for p in profiles if p.seed in (None, seed)]


def grouped(profiles: Sequence[StageProfile]) -> list[tuple[str, int, StageProfile]]:
    """Training stages one by one (they differ); the rest summed per kind."""
    rows: list[tuple[str, int, StageProfile]] = []
    by_kind: dict[str, list[StageProfile]] = {}
    for p in profiles:
        if p.kind in TRAINING:
            rows.append((p.name, 1, p))
        else:
            by_kind.setdefault(p.kind, []).append(p)
    for kind, group in by_kind.items():
        label = f"{kind} (x{len(group)})" if len(group) > 1 else group[0].name
        rows.append((label, len(group), summed(kind, group)))
    return rows


def summed(kind: str, profiles: Sequence[StageProfile]) -> StageProfile:
    """Several stages as one: walls and parts added, CPU seconds where every stage has them."""
    parts: dict[str, float] = {}
    for p in profiles:
        for key, seconds in p.parts.items():
            parts[key] = parts.get(key, 0.0) + seconds
    cpu = [p.cpu_s for p in profiles]
    total_cpu = None if any(c is None for c in cpu) else sum(c for c in cpu if c is not None)
    return StageProfile(kind, kind, sum(p.wall_s for p in profiles), total_cpu, parts)


def format_profile(profiles: Sequence[StageProfile]) -> str:
    """A Markdown table: one row per training stage or kind, then the totals."""
    rows = grouped(profiles)
    used = [c for c in COLUMNS if any(c in p.parts for _, _, p in rows)]
    head = ["stage", "wall s", "CPU s", *(f"{c} s" for c in used)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, _, p in rows:
        lines.append(_row(label, p, used))
    lines.append(_row("**total**", summed("total", [p for _, _, p in rows]), used))
    return "\n".join(lines)


def _row(label: str, p: StageProfile, used: Sequence[str]) -> str:
    cells = [label, f"{p.wall_s:,.0f}", "-" if p.cpu_s is None else f"{p.cpu_s:,.0f}"]
    cells += [f"{p.parts[c]:,.0f}" if c in p.parts else "-" for c in used]
    return "| " + " | ".join(cells) + " |"
