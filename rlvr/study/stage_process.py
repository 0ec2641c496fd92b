"""Process helpers shared by the launchers, the warm-start server and its forked stages."""

from __future__ import annotations

import ctypes
import signal


def die_with_parent() -> None:
    """Child side of fork: get SIGKILL when the parent dies, so a killed study leaves no
    orphan trainer writing into the folder the rerun resumes."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
