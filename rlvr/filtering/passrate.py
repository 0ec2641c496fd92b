"""Pass rates of training rows: the band that keeps rows, each row's outcome, the counts table.

A row's pass rate is the share of its k sampled completions the verifier calls ``correct``. A
row with any infrastructure error among its verdicts has no trustworthy pass rate: it is
``errored``, neither kept nor counted as hard (never silently 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from rlvr.config.filter import FilterConfig
from verifiers import Status, Verdict

KEPT, BELOW, ABOVE, ERRORED = "kept", "below", "above", "errored"
OUTCOMES = (KEPT, BELOW, ABOVE, ERRORED)


@dataclass(frozen=True)
class PassBand:
    """Pass rates kept: between ``low`` and ``high``, each end open unless included."""

    low: float = 0.0
    high: float = 1.0
    include_low: bool = False
    include_high: bool = False

    @classmethod
    def of(cls, c: FilterConfig) -> PassBand:
        return cls(c.low, c.high, c.include_low, c.include_high)

    def outcome(self, p: float) -> str:
        if p < self.low or (p == self.low and not self.include_low):
            return BELOW
        if p > self.high or (p == self.high and not self.include_high):
            return ABOVE
        return KEPT

    def text(self) -> str:
        left = "<=" if self.include_low else "<"
        right = "<=" if self.include_high else "<"
        return f"{self.low:g} {left} p {right} {self.high:g}"


@dataclass(frozen=True)
class RowPass:
    """One row's sampled outcome: how many of its k samples were correct, or errored."""

    id: str
    domain: str
    k: int
    correct: int
    errors: int
    outcome: str

    @property
    def pass_rate(self) -> float | None:
        return None if self.errors else self.correct / self.k

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "pass_rate": self.pass_rate}


def row_pass(row: dict, verdicts: Sequence[Verdict], band: PassBand) -> RowPass:
    k = len(verdicts)
    correct = sum(v.status is Status.CORRECT for v in verdicts)
    errors = sum(v.status is Status.ERROR for v in verdicts)
    outcome = ERRORED if errors or not k else band.outcome(correct / k)
    return RowPass(row["id"], row["domain"], k, correct, errors, outcome)


def domain_counts(results: Sequence[RowPass], k: int) -> dict[str, object]:
    """Rows, each outcome's count, the histogram of correct samples (0..k) and mean pass rate."""
    outcomes = Counter(r.outcome for r in results)
    scored = [r.pass_rate for r in results if r.pass_rate is not None]
    histogram = Counter(r.correct for r in results if r.outcome != ERRORED)
    return {
        "rows": len(results),
        **{o: outcomes.get(o, 0) for o in OUTCOMES},
        "histogram": {str(j): histogram.get(j, 0) for j in range(k + 1)},
        "mean_pass_rate": sum(scored) / len(scored) if scored else None,
    }


def counts_table(per_domain: dict[str, dict], band: PassBand) -> str:
    """A Markdown table of the counts per domain and in total, for the log and the docs."""
    head = f"| domain | rows | kept ({band.text()}) | below | above | errored | kept share |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    for domain, c in per_domain.items():
        share = f"{c[KEPT] / c['rows']:.0%}" if c["rows"] else "-"
        lines.append(f"| {domain} | {c['rows']} | {c[KEPT]} | {c[BELOW]} | {c[ABOVE]} | {c[ERRORED]} | {share} |")
    return "\n".join(lines)
