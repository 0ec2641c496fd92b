"""Machine-wide uid slots: every live sandbox worker, in any process, runs its code as its own uid.

Started as root, a worker runs untrusted code as a spare uid. Two processes (two test workers,
two training ranks) each numbering their workers from 0 would share those uids, and a uid's
processes can signal each other and share its RLIMIT_NPROC: one pool's clean-up sweep
(``kill -1`` as the code's uid, the rlimit backend) would kill the other pool's running code.
A slot is an exclusive ``flock`` on one lock file; the kernel drops it when its holder exits,
so a crashed process never leaks a slot.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from pathlib import Path

SLOTS = 1000  # uid bases in backends.py are 1000 apart: child and server uids never overlap


class SlotsExhausted(RuntimeError):
    """Every uid slot is held by a live worker."""


def default_folder() -> Path:
    """Root-only /run where it exists (sandboxed code cannot plant files there), else tmp."""
    base = Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    return base / "rlvr-sandbox-uids"


def _checked(folder: Path) -> Path:
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise PermissionError(f"uid slot folder {folder} is not a private folder of this user")
    return folder


class UidSlot:
    """One held slot; ``release`` (or process exit) frees it for another worker."""

    def __init__(self, number: int, fd: int) -> None:
        self.number, self._fd = number, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = -1


def lease(folder: Path | None = None) -> UidSlot:
    """The lowest slot no live worker on this machine holds."""
    folder = _checked(folder or default_folder())
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    for number in range(SLOTS):
        fd = os.open(folder / f"{number}.lock", flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidSlot(number, fd)
    raise SlotsExhausted(f"all {SLOTS} sandbox uid slots in {folder} are held by live workers")
