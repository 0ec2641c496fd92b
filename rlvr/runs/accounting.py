"""Compute accounting: device-seconds of runs and merges, summed (the mixed-vs-separate cost).

A run's devices are its training processes plus, when a separate vLLM server generates
(``trainer.vllm_mode=server``), the server's ``trainer.vllm_server_devices`` for the whole run:
the server is held while the run lasts. Colocated generation (vLLM colocate, transformers, or
the one-step-ahead copy of ``trainer.async_generation``) shares the training devices.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def generation_placement(trainer: Any) -> dict[str, Any]:
    """Where generation runs (``colocate`` | ``server``) and the devices a server holds."""
    server = bool(trainer.use_vllm) and trainer.vllm_mode == "server"
    return {
        "placement": "server" if server else "colocate",
        "server_devices": int(trainer.vllm_server_devices) if server else 0,
    }


def training_compute(run: Any, wall_s: float) -> dict[str, Any]:
    """The ``compute`` record of a run summary: its processes x wall time, plus a generation
    server's devices x wall time (counted in ``device_seconds`` and listed apart)."""
    from rlvr.runs.folders import device_seconds

    compute: dict[str, Any] = device_seconds(wall_s)
    generation = generation_placement(run.trainer)
    server = generation["server_devices"]
    compute["generation_placement"] = generation["placement"]
    compute["generation_server_devices"] = server
    compute["generation_server_device_seconds"] = server * wall_s
    compute["device_seconds"] += server * wall_s
    if "gpu_hours" in compute:
        compute["gpu_hours"] += server * wall_s / 3600
    return compute


def run_cost(run_dir: str | Path) -> dict[str, float] | None:
    """Device-seconds (and wall seconds) of one training run or merge folder; None if unrecorded."""
    folder = Path(run_dir)
    summary = folder / "summary.json"
    if summary.is_file():
        data = json.loads(summary.read_text())
        compute = data.get("compute", {})
        if "device_seconds" in compute:
            total = float(compute["device_seconds"])
            rl_s = (data.get("rl") or {}).get("seconds")
            procs = float(compute.get("processes", 1))
            held = procs + float(compute.get("generation_server_devices", 0))  # server: RL too
            cost = {
                "device_seconds": total,
                "wall_s": float(compute.get("wall_s", total)),
                # RL alone (no SFT warm start, no held-out evals): the paper's GPU-hours
                "rl_device_seconds": held * float(rl_s) if rl_s is not None else total,
            }
            if server_s := compute.get("generation_server_device_seconds"):
                cost["generation_server_device_seconds"] = float(server_s)
            teacher_s = (data.get("rl") or {}).get("teacher_s")
            if teacher_s is not None:  # distillation: its teachers' forwards, a part of the above
                cost["teacher_device_seconds"] = procs * float(teacher_s)
            return cost
    merge = folder / "merge.json"
    if merge.is_file():
        info = json.loads(merge.read_text())
        total = float(info["device_seconds"])
        return {
            "device_seconds": total,
            "wall_s": float(info["seconds"]),
            "rl_device_seconds": total,
        }
    return None


def sum_compute(run_dirs: Iterable[str | Path]) -> dict[str, Any]:
    """Total device-seconds of a set of runs (e.g. the five experts plus their merge).

    Returns ``{"device_seconds", "wall_s", "rl_device_seconds" (RL steps only, merges whole),
    "device_hours", "runs": {dir: device_seconds}, "missing": [dirs with no recorded compute]}``;
    missing runs count as zero and are logged.
    """
    runs: dict[str, float] = {}
    missing: list[str] = []
    wall = rl = 0.0
    for run_dir in run_dirs:
        cost = run_cost(run_dir)
        if cost is None:
            missing.append(str(run_dir))
            continue
        runs[str(run_dir)] = cost["device_seconds"]
        wall += cost["wall_s"]
        rl += cost["rl_device_seconds"]
    if missing:
        log.warning("no recorded compute (summary.json/merge.json) in: %s", ", ".join(missing))
    total = sum(runs.values())
    return {
        "device_seconds": total,
        "wall_s": wall,
        "rl_device_seconds": rl,
        "device_hours": total / 3600,
        "runs": runs,
        "missing": missing,
    }
