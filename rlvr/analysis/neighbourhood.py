"""Policy neighbourhood: how merging expert B into expert A moves A's domain (an asymmetric table).

The ``neighbourhood`` stage (``pairs.py``) merges every pair of experts of a seed and evaluates
the merge on both domains. Entry (A, B): the merge's score on A's benchmarks minus expert A's
there, in points of ``report.metric``. Read across a row: which experts' updates A can take on;
down a column: whose updates B's helps. The paper finds it asymmetric (its code expert helps
math, not the reverse). Seeds pair: ``math+code-seed1`` against ``math-seed1``; the figure
shows the mean over seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from rlvr.analysis.charts import neighbourhood_figure
from rlvr.analysis.evaluations import Evaluations
from rlvr.analysis.outputs import Output
from rlvr.analysis.pairs import FOLDER
from rlvr.config import ConfigError
from rlvr.reporting.seeds import split_seed
from rlvr.reporting.tables import ModelResult, Table, domain_scores, load_results
from tasks.schema import DOMAINS


def _score(r: ModelResult | None, benches, domain: str, metric: str) -> float | None:
    return None if r is None else domain_scores(r, benches, metric).get(domain)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


class Neighbourhood:
    name = "neighbourhood"

    def __init__(self, evals: Evaluations, study: Path, metric: str) -> None:
        self.evals, self.metric = evals, metric
        self.pairs = load_results(study / FOLDER)
        if not self.pairs:
            raise ConfigError(
                f"analysis 'neighbourhood' reads the pair merges' evaluations under "
                f"{study / FOLDER / 'eval'}, and there are none: run the study with "
                "study.stages=[neighbourhood,analyze], or drop neighbourhood from analyze.analyses"
            )

    def rows(self) -> list[tuple]:
        benches = self.evals.benchmarks
        sft = self.evals.sft
        out = []
        for pair in self.pairs:
            stem, seed = split_seed(pair.label)
            a, _, b = stem.partition("+")
            suffix = "" if seed is None else f"-seed{seed}"
            for x, y in ((a, b), (b, a)):
                ex, ey = self.evals.get(x + suffix), self.evals.get(y + suffix)
                merged = _score(pair, benches, x, self.metric)
                own = _score(ex, benches, x, self.metric)
                base = _score(sft, benches, x, self.metric)
                out.append(
                    (
                        x,
                        y,
                        seed,
                        base,
                        own,
                        _score(ey, benches, x, self.metric),
                        merged,
                        _diff(merged, own),
                        _diff(merged, base),
                    )
                )
        rank = {d: i for i, d in enumerate(DOMAINS)}
        return sorted(out, key=lambda r: (rank.get(r[0], 99), rank.get(r[1], 99), r[2] or 0))

    def matrix(self, rows: list[tuple]) -> tuple[list[str], torch.Tensor]:
        domains = [d for d in DOMAINS if any(r[0] == d for r in rows)]
        values = torch.full((len(domains), len(domains)), math.nan)
        for i, x in enumerate(domains):
            values[i, i] = 0.0
            for j, y in enumerate(domains):
                cells = [r[7] for r in rows if (r[0], r[1]) == (x, y) and r[7] is not None]
                if cells:
                    values[i, j] = sum(cells) / len(cells)
        return domains, values

    def write(self, out_dir: Path) -> Output:
        rows = self.rows()
        table = Table(
            "neighbourhood",
            f"Policy neighbourhood: expert A merged with expert B, scored on A's domain ({self.metric}, %)",
            (
                "A (domain scored)",
                "B (merged in)",
                "seed",
                "SFT",
                "expert A",
                "expert B",
                "merge(A, B)",
                "merge - expert A",
                "merge - SFT",
            ),
            tuple(rows),
            ("asymmetric: (A, B) and (B, A) are the same merge scored on different domains",),
        )
        domains, values = self.matrix(rows)
        figure = neighbourhood_figure(values, domains, out_dir / "neighbourhood.png")
        return Output(self.name, (table,), (figure,))
