"""Per-verifier keyword options from a run's config: the domains' ``verifier_options`` and the
``sandbox`` group's settings for the code verifier. Light on purpose: evaluation stages read it
without importing the training stack."""

from __future__ import annotations

import os
from typing import Any

from rlvr.config import RunConfig


def verifier_options(run: RunConfig) -> dict[str, dict[str, Any]]:
    """Per-verifier keyword options from the domain configs (``domains.<d>.verifier_options``)."""
    options: dict[str, dict[str, Any]] = {}
    for dc in run.domains.values():
        for name, opts in dc.verifier_options.items():
            options.setdefault(name, {}).update(opts)
    if "code" in run.domains:
        add_sandbox_options(run, options)
    return options


def add_sandbox_options(run: RunConfig, options: dict[str, dict[str, Any]]) -> None:
    """The ``sandbox`` group's settings for the code verifier, unless a domain sets its own."""
    code = options.setdefault("code", {})
    code.setdefault("sandbox", run.sandbox.backend)
    code.setdefault("workers", max(1, min(os.cpu_count() or 1, run.sandbox.max_workers)))
    code.setdefault("memory_mb", run.sandbox.memory_mb)
    code.setdefault("sample_time_limit_s", run.sandbox.time_limit_s)
