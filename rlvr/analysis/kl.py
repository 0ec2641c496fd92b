"""Token-level KL of every model from the SFT model on held-out prompts, beside its change in score.

For each evaluated model M (the SFT model aside) and each benchmark of the study: M samples
``analyze.kl.samples`` completions for the first ``analyze.kl.prompts`` held-out prompts (the
evaluation's rows); both M and SFT score every completion token, and the KL(M || SFT) of the
two next-token distributions there (exact over the vocabulary, at the sampling temperature)
is averaged over all completion tokens (``rlvr.distillation.heldout.heldout_kl``). A model
identical to SFT gives exactly 0. The score change is M's minus SFT's on the same benchmarks
(``report.metric``, points), from the evaluations.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from rlvr.analysis.charts import kl_figure
from rlvr.analysis.evaluations import Evaluations, heldout_rows
from rlvr.analysis.outputs import Output
from rlvr.config import ConfigError, RunConfig
from rlvr.reporting.tables import Table, domain_scores

log = logging.getLogger(__name__)


def load(path: str, run: RunConfig):
    """A model in eval mode on the GPU when there is one."""
    import torch

    from rlvr.models.loading import load_model

    device = "cuda" if torch.cuda.is_available() else "cpu"
    return load_model(path, run.model).to(device).eval().requires_grad_(False)


def model_kl(model, sft, tokenizer, rows_by_domain: dict[str, list[dict]], run: RunConfig) -> dict:
    """``{domain: {"kl", "tokens", "prompts"}}`` of KL(model || sft) per completion token."""
    from rlvr.distillation.heldout import heldout_kl
    from rlvr.models.chat_format import ChatFormat

    k = run.analyze.kl
    out = {}
    for domain, rows in rows_by_domain.items():  # one domain per call: identical batches
        out.update(
            heldout_kl(
                model,
                {domain: sft},
                tokenizer,
                rows,
                samples=k.samples,
                max_new_tokens=k.max_new_tokens,
                temperature=k.temperature,
                seed=run.analyze.seed,
                batch_size=k.batch_size,
                chat=ChatFormat.of(run.model),
            )
        )
    return out


class PolicyKL:
    name = "kl"

    def __init__(self, run: RunConfig, evals: Evaluations) -> None:
        k = run.analyze.kl
        if not (k.prompts >= 1 and k.samples >= 1 and k.max_new_tokens >= 1 and k.temperature > 0):
            raise ConfigError("analyze.kl.prompts, samples and max_new_tokens must be >= 1 and temperature > 0")
        self.run, self.evals = run, evals
        self.models = [r for r in evals.results if r.role != "sft"]

    def rows_by_domain(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for domain, bench in self.evals.benchmarks:
            out.setdefault(domain, []).extend(heldout_rows(self.run, bench, self.run.analyze.kl.prompts))
        return out

    def measure(self) -> list[tuple]:
        from rlvr.models.loading import load_tokenizer

        sft_path = self.evals.model_path(self.evals.sft)
        sft = load(sft_path, self.run)
        tokenizer = load_tokenizer(sft_path, self.run.model)
        rows = self.rows_by_domain()
        benches, metric = self.evals.benchmarks, self.run.report.metric
        base = domain_scores(self.evals.sft, benches, metric)
        out = []
        for r in self.models:
            start = time.perf_counter()
            model = load(self.evals.model_path(r), self.run)
            kl = model_kl(model, sft, tokenizer, rows, self.run)
            del model
            tokens = sum(v["tokens"] for v in kl.values())
            mean = sum(v["kl"] * v["tokens"] for v in kl.values()) / tokens if tokens else None
            mine = domain_scores(r, benches, metric)
            gains = [mine[d] - base[d] for d in kl if mine.get(d) is not None and base.get(d) is not None]
            gain = sum(gains) / len(gains) if gains else None
            per = (1e3 * kl[d]["kl"] for d in rows)  # millinats: tiny models move little
            out.append((r.label, r.role, None if mean is None else 1e3 * mean, int(tokens), gain, *per))
            log.info("kl %s: %.4g per token (%.1f s)", r.label, mean or 0.0, time.perf_counter() - start)
        return out

    def write(self, out_dir: Path) -> Output:
        rows = self.measure()
        domains = list(self.rows_by_domain())
        k = self.run.analyze.kl
        table = Table(
            "kl",
            f"KL(model || SFT) per token on sampled held-out completions, beside the change in "
            f"score ({self.run.report.metric}, points)",
            (
                "model",
                "role",
                "KL (mnat/token)",
                "tokens",
                "score - SFT",
                *(f"KL {d} (mnat)" for d in domains),
            ),
            tuple(rows),
            (
                f"{k.prompts} prompts per benchmark x {k.samples} samples from the model, at most "
                f"{k.max_new_tokens} tokens, temperature {k.temperature:g}; exact KL of the "
                "next-token distributions at each sampled token, averaged over tokens",
            ),
        )
        figure = kl_figure([(r[0], (r[2] or 0.0) / 1e3, r[4]) for r in rows], out_dir / "kl.png")
        return Output(self.name, (table,), (figure,))
