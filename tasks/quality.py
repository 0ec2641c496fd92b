"""Data quality: required columns, dropped-row accounting, prompt dedup and data statistics."""

from __future__ import annotations

import json
import logging
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_SPACE = re.compile(r"\s+")


class MissingColumnError(KeyError):
    """A source row lacks a field its adapter needs; the message names the column and source."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class SkipRow(ValueError):
    """A source row whose reference cannot be built or parsed; dropped and counted, not fatal."""


def require_columns(row: Mapping[str, Any], columns: Iterable[str], source: str) -> None:
    """Fail fast (bad setup) when ``row`` lacks any of ``columns``."""
    for col in columns:
        if col not in row:
            present = ", ".join(sorted(map(str, row))) or "(none)"
            raise MissingColumnError(f"source {source!r} lacks required column {col!r}; columns present: {present}")


def field_of(row: Mapping[str, Any], column: str, source: str) -> Any:
    """``row[column]``, raising ``MissingColumnError`` naming the column when absent."""
    if column not in row:
        require_columns(row, [column], source)
    return row[column]


def normalise_prompt(text: str) -> str:
    """Lowercase with whitespace runs collapsed: the dedup key of a prompt."""
    return _SPACE.sub(" ", text).strip().lower()


def prompt_text(row: Mapping[str, Any]) -> str:
    """All message contents of a canonical row, joined: what dedup compares."""
    prompt = row["prompt"]
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(m.get("content", "")) for m in prompt)


def reference_parses(row: Mapping[str, Any]) -> bool:
    """True when the row's reference column is a JSON object with at least one key."""
    ref = row.get("reference")
    try:
        value = json.loads(ref) if isinstance(ref, str) else ref
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and bool(value)


@dataclass
class SourceCounts:
    """Per-source tally of what a load kept and why it dropped the rest."""

    read: int = 0
    kept: int = 0
    duplicates: int = 0
    dropped: Counter = field(default_factory=Counter)  # reason -> count


@dataclass
class QualityLog:
    """Accumulates per-source counts across loads; ``summary()`` logs them."""

    sources: dict[str, SourceCounts] = field(default_factory=dict)

    def counts(self, source: str) -> SourceCounts:
        return self.sources.setdefault(source, SourceCounts())

    def drop(self, source: str, reason: str) -> None:
        self.counts(source).dropped[reason] += 1

    def total_dropped(self, source: str | None = None) -> int:
        picked = [self.sources[source]] if source else list(self.sources.values())
        return sum(sum(c.dropped.values()) for c in picked)

    def summary(self) -> None:
        for source, c in sorted(self.sources.items()):
            dropped = sum(c.dropped.values())
            level = logging.WARNING if dropped else logging.INFO
            reasons = ", ".join(f"{r}: {n}" for r, n in c.dropped.most_common(3))
            log.log(
                level,
                "%s: read %d, kept %d, dropped %d%s, duplicates %d",
                source,
                c.read,
                c.kept,
                dropped,
                f" ({reasons})" if reasons else "",
                c.duplicates,
            )


def dedup(
    rows: Iterable[dict[str, Any]],
    quality: QualityLog | None = None,
    seen: set[str] | None = None,
    source: str | None = None,
) -> list[dict[str, Any]]:
    """Keep the first row of each normalised prompt; count the rest per source.

    Pass the same ``seen`` set to several calls to dedup across tasks; ``source`` names the
    counter to charge (default: each row's own ``source``).
    """
    seen = set() if seen is None else seen
    kept = []
    for row in rows:
        key = normalise_prompt(prompt_text(row))
        if key in seen:
            if quality is not None:
                quality.counts(source or row["source"]).duplicates += 1
            continue
        seen.add(key)
        kept.append(row)
    return kept


@dataclass(frozen=True)
class DomainStats:
    """Counts and prompt-length statistics (characters) of one domain's rows."""

    domain: str
    count: int
    sources: tuple[str, ...]
    chars_min: int
    chars_median: float
    chars_mean: float
    chars_max: int


def domain_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, DomainStats]:
    """Per-domain counts and prompt-length statistics, for a data report."""
    by_domain: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_domain.setdefault(row["domain"], []).append(row)
    out = {}
    for domain, group in sorted(by_domain.items()):
        lengths = [len(prompt_text(r)) for r in group]
        out[domain] = DomainStats(
            domain=domain,
            count=len(group),
            sources=tuple(sorted({r["source"] for r in group})),
            chars_min=min(lengths),
            chars_median=float(statistics.median(lengths)),
            chars_mean=round(statistics.fmean(lengths), 1),
            chars_max=max(lengths),
        )
    return out


def format_report(stats: Mapping[str, DomainStats], quality: QualityLog | None = None) -> str:
    """A plain-text data report: one line per domain, then one per source with drops."""
    lines = [f"{'domain':<12} {'rows':>7} {'min':>6} {'median':>8} {'mean':>8} {'max':>7}"]
    for s in stats.values():
        lines.append(
            f"{s.domain:<12} {s.count:>7} {s.chars_min:>6} {s.chars_median:>8.0f} "
            f"{s.chars_mean:>8.0f} {s.chars_max:>7}"
        )
    if quality is not None:
        lines.append(f"{'source':<40} {'read':>7} {'kept':>7} {'dropped':>8} {'dups':>6}")
        for name, c in sorted(quality.sources.items()):
            lines.append(f"{name:<40} {c.read:>7} {c.kept:>7} {sum(c.dropped.values()):>8} {c.duplicates:>6}")
    return "\n".join(lines)
