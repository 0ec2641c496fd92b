"""``ast.parse`` behind one process-wide lock, so no two threads build an AST at once.

CPython 3.11 keeps the AST builder's recursion depth in per-interpreter state, so two threads
parsing at once (a batch of code items scored over the sandbox's threads) can fail one of them
with ``SystemError: AST constructor recursion depth mismatch`` (seen here on 3.11.7 under
load; see CPython gh-106905)."""

from __future__ import annotations

import ast
import threading
from typing import Any

AST_LOCK = threading.RLock()  # re-entrant: a finalizer that parses on the same thread is fine


def parse(source: str, **kwargs: Any) -> ast.AST:
    """``ast.parse(source, **kwargs)``, one thread at a time."""
    with AST_LOCK:
        return ast.parse(source, **kwargs)
