"""Calibration: does the SFT model leave RL room on every held-out set of the study?

python -m rlvr.calibrate experiment=tiny_study                 # the study's SFT model
python -m rlvr.calibrate experiment=tiny_study 'eval.models=["sft=outputs/x/final"]'

Evaluates the model on the study's held-out benchmarks with the study's decoding (into
``<study>/calibration/``, apart from the study's own evaluations so a changed setting here
never leaks into its tables), then prints, per benchmark, Avg@k, pass@k and whether the set
has room for RL (``rlvr.reporting.calibration``). Exit status 1 when some set has none.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path

from rlvr.config import ConfigError, RunConfig
from rlvr.reporting.tables import Table

log = logging.getLogger(__name__)


def calibrate(run: RunConfig, run_dir: Path | None = None) -> Table:
    """Evaluate (finished pairs are kept), tabulate, write ``calibration.{md,csv}``, print."""
    from rlvr.evaluation.evaluator import evaluate
    from rlvr.reporting.calibration import calibration_table, failing
    from rlvr.reporting.tables import load_results, to_markdown, write_table
    from rlvr.study.plan import benchmarks, study_root

    root = study_root(run)
    models = list(run.eval.models) or [f"sft={_study_sft_model(run, root)}"]
    folder = root / "calibration"
    evaluate(replace(run, eval=replace(run.eval, models=models, tasks=benchmarks(run), out_dir=str(folder))))
    labels = {m.split("=", 1)[0] if "=" in m else Path(m).name for m in models}
    roles = {label: "sft" for label in labels}
    results = [r for r in load_results(folder, roles) if r.label in labels]
    table = calibration_table(results)
    write_table(table, folder)
    sys.stdout.write(to_markdown(table))
    if bad := failing(table):
        log.warning("%d held-out set(s) leave RL no room: %s", len(bad), [r[2] for r in bad])
    return table


def _study_sft_model(run: RunConfig, root: Path) -> str:
    from rlvr.study.plan import given_sft_path

    path = Path(given_sft_path(run)) if run.study.sft_model else root / "sft" / "final"
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"no SFT model at {path}: run the study's SFT stage first "
            f"(python -m rlvr.study experiment={run.experiment}), or name a model with "
            "'eval.models=[\"sft=<folder>\"]'"
        )
    return str(path.resolve())


def main() -> None:
    from rlvr.reporting.calibration import failing
    from rlvr.runs.cli import hydra_entry

    tables: list[Table] = []
    hydra_entry("calibrate", lambda run, run_dir: tables.append(calibrate(run, run_dir)))
    sys.exit(1 if tables and failing(tables[0]) else 0)


if __name__ == "__main__":
    main()
