"""Freed memory kept for reuse: a real process allocating tensors of changing sizes faults far
fewer pages with ``keep_freed_memory`` than with glibc's defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import _requirements as required

from rlvr.runs.memory import keep_freed_memory

PROBE = """
import json, resource, sys
import torch
from rlvr.runs.memory import keep_freed_memory
applied = keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(40):  # about 16 MB each, a different size each time, as activations are
    x = torch.ones((4 << 20) + 1000 * i)
    del x
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"applied": applied, "faults": faults}))
"""


def probe(keep: bool) -> dict:
    env = {**os.environ, "RLVR_KEEP_FREED_MEMORY": "1" if keep else "0"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


@required.needs(sys.platform.startswith("linux"), "glibc's malloc (Linux)")
def test_freed_tensors_are_reused_instead_of_faulted_in_again():
    default, kept = probe(False), probe(True)
    assert default["applied"] is False and kept["applied"] is True
    # each 16 MB tensor is 4,096 pages: glibc's default maps and faults every one of them anew;
    # kept, the heap grows once (measured 8k-41k faults against 165k, depending on where the
    # heap lands among the process's mappings)
    assert default["faults"] > 40 * 2000
    assert kept["faults"] < default["faults"] / 3


def test_the_switch_leaves_the_defaults(monkeypatch):
    monkeypatch.setenv("RLVR_KEEP_FREED_MEMORY", "0")
    assert keep_freed_memory() is False
