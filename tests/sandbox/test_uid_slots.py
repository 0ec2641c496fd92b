"""uid slots: exclusive across processes until released, and pools of two processes stay apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers.sandbox import Limits, get_sandbox, uid_slots

# Loads uid_slots by path (stdlib only), so the holder starts in milliseconds.
HOLDER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("uid_slots", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
slot = mod.lease(mod.Path(sys.argv[2]))
print(slot.number, flush=True)
sys.stdin.read()
"""


def test_a_slot_is_exclusive_until_released(tmp_path: Path) -> None:
    first, second = uid_slots.lease(tmp_path), uid_slots.lease(tmp_path)
    assert (first.number, second.number) == (0, 1)
    first.release()
    assert uid_slots.lease(tmp_path).number == 0


def test_a_slot_held_by_another_process_is_skipped_and_freed_when_it_exits(tmp_path: Path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, uid_slots.__file__, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "0"
        mine = uid_slots.lease(tmp_path)
        assert mine.number == 1
    finally:
        holder.communicate("", timeout=30)  # it exits; the kernel drops its lock
    mine.release()
    assert uid_slots.lease(tmp_path).number == 0


def test_a_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(PermissionError, match="not a private folder"):
        uid_slots.lease(folder)


ATTACKER = """
import select, sys
from verifiers.sandbox import Limits, get_sandbox
box = get_sandbox("rlimit", workers=1)
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:  # until the victim's run is over
    box.run("import os, signal\\nos.kill(-1, signal.SIGKILL)", "", Limits(cpu_s=1, wall_s=1))
"""


def test_pools_of_two_processes_cannot_kill_each_others_code() -> None:
    """Two test workers (or training ranks) with the rlimit backend: before uid slots both ran
    their code as uid 61000, and every ``kill -1`` and clean-up sweep of one killed the other."""
    if os.geteuid() != 0:
        pytest.skip("not started as root: the code runs as the caller, not a spare uid")
    attacker = subprocess.Popen(
        [sys.executable, "-c", ATTACKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        box = get_sandbox("rlimit", workers=1)
        assert attacker.stdout.readline().strip() == "ready"
        source = "import time\ntime.sleep(1)\nprint('survived')"
        result = box.run(source, "", Limits(cpu_s=2, wall_s=5))
    finally:
        attacker.communicate("stop", timeout=60)
    assert attacker.returncode == 0
    assert (result.stdout, result.signal) == ("survived\n", None), result
