"""``python -m rlvr.filter``: keep the training rows a model solves sometimes (pass rate in a band).

python -m rlvr.filter init_from=outputs/<study>/sft/final 'domains=[math,science]'
python -m rlvr.filter experiment=tiny_study init_from=<sft> filter.k=8 filter.include_high=true

CHIMERA (arXiv 2603.00889) keeps for RL the problems its SFT model solves within 8 trials. This
samples ``filter.k`` completions for every training row of the selected domains (the rows
``rlvr.train`` would load: its tasks, ``mixture.train_size``, ``mixture.difficulty``), scores
them with the training verifiers, and keeps the rows whose pass rate lies in the band
(default ``0 < p < 1``). Verifier infrastructure errors are counted per domain and abort the
run above ``trainer.max_infra_error_rate``; a row with an error is neither kept nor hard.
Writes ``<out>/<domain>.jsonl`` (train on it with ``domains.<d>.train_tasks=[rows_<d>]
'domains.<d>.data_files=[<out>/<d>.jsonl]'``), ``pass_rates.jsonl``, ``pass_rates.png`` and
``counts.json``; the counts table goes to the log.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path

from rlvr.config import RunConfig
from rlvr.filtering import outputs
from rlvr.filtering.passrate import (
    KEPT,
    OUTCOMES,
    PassBand,
    counts_table,
    domain_counts,
    row_pass,
)

log = logging.getLogger(__name__)


def training_rows(run: RunConfig) -> dict[str, list[dict]]:
    """Each selected domain's training rows, loaded exactly as ``rlvr.train`` loads them."""
    from rlvr.data.rows import load_task

    return {
        domain: [
            row
            for task in dc.train_tasks
            for row in load_task(run, domain, task, split="train", n=run.mixture.train_size)
        ]
        for domain, dc in run.domains.items()
    }


def default_out_dir(run: RunConfig) -> Path:
    """``<paths.output_root>/<experiment>/filter/<run_name>``: beside, not inside, training runs."""
    return Path(run.paths.output_root) / run.experiment / "filter" / run.run_name


def filter_rows(run: RunConfig, run_dir: Path) -> dict:
    """The whole filter as a recipe; returns the counts written to ``counts.json``."""
    from rlvr.evaluation.generation import Decoding
    from rlvr.evaluation.heldout import sample_and_score
    from rlvr.models.chat_format import ChatFormat
    from rlvr.models.loading import load_model, load_tokenizer
    from rlvr.rewards.bridge import ErrorBudget
    from rlvr.runs.folders import local_device
    from rlvr.training import stages

    started = time.perf_counter()
    c = run.filter
    band = PassBand.of(c)
    out = Path(c.out_dir) if c.out_dir else default_out_dir(run)
    out.mkdir(parents=True, exist_ok=True)
    model_path = stages.starting_model(run)
    rows = training_rows(run)
    scorer = stages.make_scorer(run)  # a judge's bad setup stops the run here, before the model
    model = load_model(model_path, run.model).to(local_device())
    tokenizer = load_tokenizer(model_path, run.model)
    decoding = Decoding(
        k=c.k,
        temperature=c.temperature,
        top_p=c.top_p,
        max_new_tokens=c.max_new_tokens or run.algo.max_completion_length,
    )
    budget = ErrorBudget(run.trainer.max_infra_error_rate, run.trainer.infra_error_min_samples)
    results, kept = [], defaultdict(list)
    for domain, part in rows.items():
        log.info("%s: sampling %d completions for each of %d rows", domain, c.k, len(part))
        _, verdicts = sample_and_score(
            model,
            tokenizer,
            part,
            decoding,
            scorer,
            batch_size=c.batch_size,
            seed=c.seed,
            format_gate=run.algo.format_gate,
            chat=ChatFormat.of(run.model),
        )
        budget.record(domain, [v for vs in verdicts for v in vs])  # raises above the rate
        for row, vs in zip(part, verdicts, strict=True):
            results.append(row_pass(row, vs, band))
            if results[-1].outcome == KEPT:
                kept[domain].append(row)

    per_domain = {d: domain_counts([r for r in results if r.domain == d], c.k) for d in rows}
    files = {d: str(outputs.write_rows(out, d, kept[d])) for d in rows}
    for d, counts in per_domain.items():
        counts["file"] = files[d]
        if not counts[KEPT]:
            log.warning("%s: no row in the band %s; its file is empty", d, band.text())
    outputs.write_pass_rates(out, results)
    title = f"Pass rates of {'/'.join(Path(model_path).parts[-2:])} ({c.k} samples per row)"
    outputs.histogram(out, per_domain, c.k, band, title)
    counts = {
        "model": model_path,
        "k": c.k,
        "band": {**vars(band), "text": band.text()},
        "decoding": vars(decoding).copy(),
        "domains": per_domain,
        "total": {o: sum(d[o] for d in per_domain.values()) for o in ("rows", *OUTCOMES)},
        "samples": len(results) * c.k,
        "seconds": time.perf_counter() - started,
    }
    outputs.write_counts(out, counts)
    log.info("pass-rate filter of %s:\n%s", model_path, counts_table(per_domain, band))
    log.info("kept rows, histogram and counts in %s", out)
    return counts


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("filter", filter_rows)


if __name__ == "__main__":
    main()
