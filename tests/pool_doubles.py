"""A verifier that waits to be SIGKILLed once, and its killer, for verifier-pool fault tests.

Kept apart from the test modules so pool workers that unpickle it import nothing heavy.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers import Verdict


@dataclass(frozen=True)
class KilledOnceVerifier:
    """First attempt: publish this worker's pid in reference["pid_file"] and wait to be killed;
    any later attempt (the file exists) is correct at once."""

    name: str = "killed_once"

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        pid_file = Path(reference["pid_file"])
        if not pid_file.exists():
            partial = pid_file.with_suffix(".tmp")
            partial.write_text(str(os.getpid()))
            partial.rename(pid_file)  # the killer never reads a half-written pid
            time.sleep(60)
        return Verdict.correct(completion)


def kill_when_published(pid_file: Path, within_s: float = 120.0) -> threading.Thread:
    """SIGKILL, once, the worker that publishes its pid in ``pid_file``; from another thread."""

    def killer() -> None:
        deadline = time.monotonic() + within_s
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    return thread
