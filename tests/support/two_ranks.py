"""Two gloo ranks on CPU for the tests: launching a support module under accelerate (FSDP2
through ``tests.support.fsdp_on_cpu``, or DDP) and handing its per-rank results back."""

from __future__ import annotations

import faulthandler
import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def run_two_ranks(module: str, args: list[str], env: dict, port: int, fsdp: bool, timeout: int):
    """``accelerate launch`` of ``module`` on two CPU processes; returns the finished process."""
    wrapper = ["-m", "tests.support.fsdp_on_cpu"] if fsdp else ["-m"]
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(REPO / "conf/accelerate/cpu_fsdp2.yaml"),
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--machine_rank",
        "0",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(port),
        "--rdzv_backend",
        "static",
        "--mixed_precision",
        "no",
        *wrapper,
        module,
        *args,
    ]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def save_on_rank0(result: dict, out: str | Path) -> None:
    """Every rank's ``result``, gathered, written by rank 0 to ``out/result.pt``."""
    gathered = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(gathered, result)
    if torch.distributed.get_rank() == 0:
        torch.save(gathered, Path(out) / "result.pt")


def start_rank() -> None:
    """Print every thread's Python stack if this rank aborts (SIGABRT and other fatal signals)."""
    faulthandler.enable()


def finish_rank() -> None:
    """End a rank once its results are written: every rank past the last collective, the
    process group left, output flushed, then ``os._exit(0)`` instead of the interpreter's
    teardown. In full slow-tier runs (never alone) a rank aborted with "terminate called
    without an active exception" although leaving the group was already in place; FSDP's
    device mesh keeps the gloo group alive past ``destroy_process_group``, so teardown is the
    likely place, and the exit code then says nothing about what the test checks."""
    from rlvr.runs.cli import leave_process_group

    torch.distributed.barrier()
    leave_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
