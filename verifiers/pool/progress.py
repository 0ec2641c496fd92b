"""A worker's progress cell: items finished and when, in memory both processes map.

The worker answers a whole chunk in one message, yet the pool must still kill the one item
that overruns its time limit. So after each item the worker stores, in a 16-byte shared
mapping, the monotonic time the item finished and then the count of items it has finished;
the pool reads them in the opposite order. A read can pair a new time with an old count (the
item gets a moment longer) but never an old time with a new count (no early kill).
``time.monotonic`` is one system-wide clock on Linux, so both processes read the same clock.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile

_TIME = struct.Struct("<d")
_COUNT = struct.Struct("<q")
SIZE = _TIME.size + _COUNT.size


def new_cell_fd() -> int:
    """A file descriptor of a zeroed 16-byte file that lives in memory, to pass to a worker."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rlvr-pool-progress", 0)
    else:  # no memfd: an unlinked temporary file works the same
        fd, path = tempfile.mkstemp(prefix="rlvr-pool-progress-")
        os.unlink(path)
    os.ftruncate(fd, SIZE)
    return fd


class ProgressCell:
    """The mapping over a cell's descriptor; the descriptor is closed once it is mapped."""

    def __init__(self, fd: int) -> None:
        try:
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)

    def finished(self, count: int, at: float) -> None:
        """Worker side: ``count`` items done, the last at ``at`` (time first, then count)."""
        _TIME.pack_into(self._map, 0, at)
        _COUNT.pack_into(self._map, _TIME.size, count)

    def read(self) -> tuple[int, float]:
        """Pool side: (items done, when the last finished), count read before time."""
        count = _COUNT.unpack_from(self._map, _TIME.size)[0]
        at = _TIME.unpack_from(self._map, 0)[0]
        return count, at

    def close(self) -> None:
        self._map.close()
