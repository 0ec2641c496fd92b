"""Parser of parallel-reasoning trajectories: fork-join blocks validated, spans for lengths.

The layout (ThreadWeaver's, arXiv 2512.07843)::

    <think>sequential text
    <Parallel>
    <Outlines><Outline>1: plan of thread 1</Outline><Outline>2: ...</Outline></Outlines>
    <Thread>1: work of thread 1</Thread><Thread>2: ...</Thread>
    </Parallel>
    sequential join ... (more text, more blocks)
    </think>
    Answer: ...

Rules, checked in one linear scan over the tags (time and memory O(len(text)), no regex
backtracking, no recursion): blocks do not nest; a block holds exactly one ``<Outlines>``
then its threads, with only whitespace between the parts; ``<Outlines>`` holds only
``<Outline>`` entries; every outline and thread has non-blank text; threads number at least
``MIN_THREADS`` and equal the outlines; every tag is closed in order and none strays outside
its parent. Differences from the paper: blocks may not nest (ThreadWeaver does not nest them
either in its data), thread numbers (``1:``) are not required to match their outline's, and a
text over ``MAX_CHARS`` is reported as malformed instead of being parsed.

Lengths are measured by a ``count`` function over spans (default: characters; ``rlvr``
passes the policy tokenizer's count). Sequential spans are everything outside blocks plus
each block's ``<Parallel>``/``<Outlines>`` part and its closing tag; thread spans include
their tags. critical path = sequential + the longest thread of every block;
acceleration = total / critical path (1.0 without blocks).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_CHARS = 200_000  # same bound as the verifier API; longer texts are malformed, not parsed
MIN_THREADS = 2
_TAG = re.compile(r"</?(?:Parallel|Outlines|Outline|Thread)>")

Span = tuple[int, int]
Count = Callable[[str], int]


@dataclass(frozen=True)
class Block:
    """One fork-join block: its sequential head (``<Parallel><Outlines>...</Outlines>``),
    its threads (each with its tags) and its closing tag, as character spans."""

    head: Span
    threads: tuple[Span, ...]
    tail: Span
    outlines: tuple[str, ...]


@dataclass(frozen=True)
class ParallelTrace:
    """What the parser found: well-formed or not (``error`` says why), blocks, spans."""

    text: str
    blocks: tuple[Block, ...] = ()
    error: str = ""

    @property
    def well_formed(self) -> bool:
        """No structural error (a text without any block is well formed: it is sequential)."""
        return not self.error

    @property
    def parallel(self) -> bool:
        """Well formed and holding at least one block: what "a valid parallel block" means."""
        return self.well_formed and bool(self.blocks)

    def lengths(self, count: Count = len) -> Lengths:
        """Total and critical-path length; a malformed trace counts as sequential."""
        total = count(self.text)
        if not self.parallel:
            return Lengths(total, total, 0, 0)
        saved = thread_total = 0
        for block in self.blocks:
            sizes = [count(self.text[a:b]) for a, b in block.threads]
            saved += sum(sizes) - max(sizes)
            thread_total += sum(sizes)
        return Lengths(total, max(total - saved, 1), thread_total, len(self.blocks))


@dataclass(frozen=True)
class Lengths:
    """Lengths of one trajectory, in the unit of the count used."""

    total: int
    critical_path: int
    thread: int  # inside threads, tags included
    blocks: int

    @property
    def acceleration(self) -> float:
        return self.total / self.critical_path if self.critical_path else 1.0

    @property
    def eta(self) -> float:
        """ThreadWeaver's acceleration ratio 1 - L_critical / L_total (0 when sequential)."""
        return 1.0 - self.critical_path / self.total if self.total else 0.0


class _Malformed(Exception):
    pass


def parse_parallel(text: object) -> ParallelTrace:
    """Parse any input; never raises. Non-text input is decoded (bytes) or malformed."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return ParallelTrace("", error=f"not text: {type(text).__name__}")
    if len(text) > MAX_CHARS:
        return ParallelTrace(text, error=f"longer than {MAX_CHARS} characters")
    try:
        return ParallelTrace(text, tuple(_scan(text)))
    except _Malformed as exc:
        return ParallelTrace(text, error=str(exc))


def _scan(text: str) -> list[Block]:
    blocks: list[Block] = []
    state = "seq"  # seq | head | outlines | outline | threads | thread
    start = part = 0  # block start; start of the current outline/thread body
    outlines: list[str] = []
    threads: list[Span] = []
    head_end = last = 0  # end of </Outlines>; end of the previous tag inside a block
    for m in _TAG.finditer(text):
        tag, a, b = m.group(), m.start(), m.end()
        if state != "seq" and state not in ("outline", "thread") and text[last:a].strip():
            raise _Malformed(f"text between block parts before {tag} at {a}")
        if (state, tag) == ("seq", "<Parallel>"):
            state, start, outlines, threads = "head", a, [], []
        elif (state, tag) == ("head", "<Outlines>"):
            state = "outlines"
        elif (state, tag) == ("outlines", "<Outline>"):
            state, part = "outline", b
        elif (state, tag) == ("outline", "</Outline>"):
            if not text[part:a].strip():
                raise _Malformed(f"empty outline at {part}")
            state = "outlines"
            outlines.append(text[part:a].strip())
        elif (state, tag) == ("outlines", "</Outlines>"):
            if not outlines:
                raise _Malformed(f"no outline in the block at {start}")
            state, head_end = "threads", b
        elif (state, tag) == ("threads", "<Thread>"):
            state, part = "thread", b
            threads.append((a, a))
        elif (state, tag) == ("thread", "</Thread>"):
            if not text[part:a].strip():
                raise _Malformed(f"empty thread at {part}")
            state = "threads"
            threads[-1] = (threads[-1][0], b)
        elif (state, tag) == ("threads", "</Parallel>"):
            _check_counts(outlines, threads, start)
            blocks.append(Block((start, head_end), tuple(threads), (a, b), tuple(outlines)))
            state = "seq"
        else:
            raise _Malformed(_unexpected(state, tag, a))
        last = b
    if state != "seq":
        raise _Malformed(f"unclosed block opened at {start} (inside {state})")
    return blocks


def _check_counts(outlines: list[str], threads: list[Span], start: int) -> None:
    if len(threads) < MIN_THREADS:
        raise _Malformed(f"block at {start} has {len(threads)} thread(s); at least {MIN_THREADS}")
    if len(threads) != len(outlines):
        raise _Malformed(f"block at {start} has {len(outlines)} outlines but {len(threads)} threads")


def _unexpected(state: str, tag: str, at: int) -> str:
    if state == "seq":
        return f"stray {tag} at {at} outside a block"
    if tag == "<Parallel>":
        return f"nested <Parallel> at {at}: blocks do not nest"
    return f"unexpected {tag} at {at} (inside {state})"
