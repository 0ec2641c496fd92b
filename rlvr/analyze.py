"""``python -m rlvr.analyze``: the paper's analyses of a study's models, weights and outputs.

python -m rlvr.analyze experiment=tiny_study                 # reads outputs/tiny_study/
python -m rlvr.analyze analyze.study_dir=<study> 'analyze.analyses=[geometry]'
python -m rlvr.analyze analyze.base=<sft> 'analyze.models=["math=<run>/final","ties=<merge>"]'

Weight analyses (footprint, geometry) compare every model with the SFT model in one streaming
pass over the weights; output analyses (consistency, neighbourhood, kl, judge) then read the
study's evaluations and, for kl and judge, load each model to generate. Each analysis writes
its tables (Markdown + CSV) and its figure (PNG) into ``<study>/analysis/``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from rlvr.analysis import inventory, outputs, registry
from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def study_folder(run: RunConfig) -> Path:
    return Path(run.analyze.study_dir or Path(run.paths.output_root) / run.experiment)


def analyze(run: RunConfig, run_dir: Path | None = None) -> list[outputs.Output]:
    c = run.analyze
    registry.check(c)
    study = study_folder(run)
    later = registry.build_outputs(run, study)  # inputs checked before any model is read
    folder = Path(c.out_dir) if c.out_dir else study / "analysis"
    results, notes = [], []
    if registry.weight_names(c):
        sft, models = inventory.resolve(study, c.base, c.models)
        labels = [m.label for m in models]
        log.info("analysing %d models against %s: %s", len(models), sft, labels)
        analyses = registry.build(c, models)
        start = time.perf_counter()
        params = registry.weight_pass(analyses, sft, models, c.chunk_elements, c.mapped_mb)
        wall = time.perf_counter() - start
        results = [a.write(folder) for a in analyses]
        notes.append(
            f"Weights: {len(models)} models against the SFT model `{sft}`; {params:,} "
            f"parameters each, read in {wall:.1f} s."
        )
    for analysis in later:
        start = time.perf_counter()
        results.append(analysis.write(folder))
        notes.append(f"{analysis.name}: {time.perf_counter() - start:.1f} s.")
        log.info("%s written in %.1f s", analysis.name, time.perf_counter() - start)
    index = outputs.write_outputs(results, folder, " ".join(notes))
    outputs.log_to_wandb(run, results, folder)
    log.info("analyses written to %s (%s)", folder, index.name)
    return results


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("analyze", analyze)


if __name__ == "__main__":
    main()
