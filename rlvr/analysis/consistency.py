"""Skill consistency: per-item gains over SFT, and whether a model's newly solved items are the experts'.

Read from the evaluations' per-sample records. An item is a held-out prompt of one benchmark;
its score under a model is its Avg@k (the mean verdict score of the evaluation's sampled
completions). The *gain vector* of a model holds, per item, its Avg@k minus the SFT model's.
An item is *solved* when its Avg@k reaches ``analyze.consistency.solved_at`` (0.5: most samples
correct), and *newly solved* by a model when that model solves it and the SFT model does not.

For the mixed model, each merge and each distilled model (the *combined* models), a newly
solved item is *inherited* when some expert of the same seed (every expert, for a label
without a seed) also newly solves it, and *new* when none does; the paper finds that merges
inherit and mixed training diverges. Beside the counts, the continuous view: the share of a
model's positive gain that some expert shows on the same item (sum over items of
min(g+, max over experts of g_e+) / sum of g+), and the cosine of its gain vector with each
expert's. Every item's gains go to ``consistency_gains.csv``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.analysis.charts import consistency_figure
from rlvr.analysis.evaluations import Evaluations, item_scores
from rlvr.analysis.outputs import Output
from rlvr.reporting.seeds import split_seed
from rlvr.reporting.tables import Table

COMBINED = ("mixed", "merge", "distill")
Item = tuple[str, str]  # (benchmark, id)


@dataclass(frozen=True)
class Skills:
    """Per-item Avg@k of the SFT model and of every other evaluated model."""

    items: tuple[Item, ...]  # the items the SFT model was evaluated on, in benchmark order
    sft: tuple[float, ...]
    scores: dict[str, tuple[float | None, ...]]  # label -> per-item Avg@k (None: not evaluated)
    roles: dict[str, str]

    def gains(self, label: str) -> list[float | None]:
        return [None if s is None else s - b for s, b in zip(self.scores[label], self.sft, strict=True)]

    def newly_solved(self, label: str, solved_at: float) -> set[int]:
        return {
            i
            for i, (s, b) in enumerate(zip(self.scores[label], self.sft, strict=True))
            if s is not None and s >= solved_at and b < solved_at
        }


def read_skills(evals: Evaluations) -> Skills:
    benches = [b for _, b in evals.benchmarks]
    base = {b: item_scores(evals.records("sft", b)) for b in benches}
    items = tuple((b, i) for b in benches for i in base[b])
    scores, roles = {}, {}
    for r in evals.results:
        if r.role in ("base", "sft"):
            continue
        mine = {b: item_scores(evals.records(r.label, b)) for b in benches}
        scores[r.label] = tuple(mine[b].get(i) for b, i in items)
        roles[r.label] = r.role
    return Skills(items, tuple(base[b][i] for b, i in items), scores, roles)


def experts_for(skills: Skills, label: str) -> list[str]:
    """The experts a combined model is compared with: those of its seed, else every expert."""
    experts = [x for x, role in skills.roles.items() if role == "expert"]
    seed = split_seed(label)[1]
    same = [x for x in experts if split_seed(x)[1] == seed]
    return same if seed is not None and same else experts


def cosine(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    dot = sum(x * y for x, y in pairs)
    na, nb = math.sqrt(sum(x * x for x, _ in pairs)), math.sqrt(sum(y * y for _, y in pairs))
    return dot / (na * nb) if na > 0 and nb > 0 else None


def inherited_gain(gain: Sequence[float | None], expert_gains: Sequence[Sequence[float | None]]) -> float | None:
    """The share of the positive gain that some expert shows on the same items (None: no gain)."""
    total = shared = 0.0
    for i, g in enumerate(gain):
        if g is None or g <= 0:
            continue
        best = max((max(e[i] or 0.0, 0.0) for e in expert_gains), default=0.0)
        total += g
        shared += min(g, best)
    return shared / total if total > 0 else None


def _percent(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


@dataclass(frozen=True)
class Consistency:
    """The summary table (counts and shares), the gain-cosine table, the figure's numbers."""

    skills: Skills
    solved_at: float

    def rows(self) -> list[tuple]:
        out = []
        for label, role in self.skills.roles.items():
            newly = self.skills.newly_solved(label, self.solved_at)
            if role not in COMBINED:
                out.append((label, role, len(newly), None, None, None, None, None))
                continue
            experts = experts_for(self.skills, label)
            by_experts = set().union(*(self.skills.newly_solved(x, self.solved_at) for x in experts))
            inherited = len(newly & by_experts)
            gains = inherited_gain(self.skills.gains(label), [self.skills.gains(x) for x in experts])
            out.append(
                (
                    label,
                    role,
                    len(newly),
                    inherited,
                    len(newly) - inherited,
                    _percent(inherited, len(newly)),
                    _percent(len(newly) - inherited, len(newly)),
                    None if gains is None else 100.0 * gains,
                )
            )
        return out

    def cosine_rows(self) -> list[tuple]:
        s = self.skills
        return [
            (label, x, cosine(s.gains(label), s.gains(x)))
            for label, role in s.roles.items()
            if role in COMBINED
            for x in experts_for(s, label)
        ]


class SkillConsistency:
    name = "consistency"

    def __init__(self, evals: Evaluations, solved_at: float) -> None:
        self.result = Consistency(read_skills(evals), solved_at)

    def write(self, out_dir: Path) -> Output:
        r, s = self.result, self.result.skills
        summary = Table(
            "consistency",
            f"Skill consistency: items newly solved over SFT (Avg@k >= {r.solved_at:g}), "
            "inherited from an expert or new",
            (
                "model",
                "role",
                "newly solved",
                "inherited",
                "new",
                "inherited %",
                "new %",
                "gain inherited %",
            ),
            tuple(r.rows()),
            (
                f"{len(s.items)} held-out items; SFT solves {sum(b >= r.solved_at for b in s.sft)}; "
                "inherited: some expert of the same seed also newly solves the item",
                "gain inherited %: of the model's positive per-item gains over SFT, the part "
                "some expert also gains on the same item (continuous counterpart)",
            ),
        )
        cosines = Table(
            "consistency_cosine",
            "Cosine of per-item gain vectors over SFT: combined model and each expert",
            ("model", "expert", "gain cosine"),
            tuple(r.cosine_rows()),
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        self._write_gains(out_dir / "consistency_gains.csv")
        figure = consistency_figure(r.rows(), out_dir / "consistency.png")
        return Output(self.name, (summary, cosines), (figure,))

    def _write_gains(self, path: Path) -> None:
        s = self.result.skills
        labels = list(s.scores)
        columns = [s.gains(x) for x in labels]
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["benchmark", "id", "sft avg@k", *(f"{x} gain" for x in labels)])
            for i, (bench, item) in enumerate(s.items):
                gains = ["" if c[i] is None else c[i] for c in columns]
                writer.writerow([bench, item, s.sft[i], *gains])
