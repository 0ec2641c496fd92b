"""What a study's numbers depend on besides its config: library versions and the machine.

Recorded in ``study.json``, so two runs of one config that disagree can be told apart by
what they ran on (a different transformers or torch build changes kernels, and with them
every trained weight), not guessed at.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "accelerate",
    "peft",
    "datasets",
    "numpy",
    "mergekit",
    "math-verify",
    "tokenizers",
    "safetensors",
)


def environment() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": versions,
    }
