"""The fidelity table: every setting of a paper's recipe beside this study's, and why they differ.

``study.recipe`` names a CSV under ``paths.data_dir`` (stage, setting, paper_value, source,
note: ``m2rl_paper/recipe.csv``); ``study.deviations`` maps ``<stage>.<setting>`` to the reason
this study differs there. Each row's value comes from the configs of the stages the study will
launch (``rlvr.study.recipe_settings``) and is compared with the paper's word by word, numbers
as numbers. A recipe row no extractor covers, or a difference without a reason, is a problem
the dry run prints and the tests refuse.
"""

from __future__ import annotations

import csv
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import RunConfig
from rlvr.reporting.recipe import FIDELITY_FILE
from rlvr.study.commands import accelerate_layout
from rlvr.study.plan import Stage, given_sft_path
from rlvr.study.recipe_settings import EXTRACTORS, Extractor, StudyConfigs

MATCH, DEVIATION, NO_REASON = "match", "deviation", "NO REASON"
NOT_COVERED, NOT_STATED, EXTERNAL = "NOT COVERED", "not stated", "external"
log = logging.getLogger(__name__)
_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?|[a-z]+|[^\sa-z\d]")


@dataclass(frozen=True)
class RecipeRow:
    stage: str
    setting: str
    paper: str
    source: str = ""
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.stage}.{self.setting}"


@dataclass(frozen=True)
class FidelityRow:
    """One recipe setting: the paper's value, this study's, and how they compare."""

    stage: str
    setting: str
    paper: str
    ours: str
    status: str  # match | deviation | NO REASON | NOT COVERED | not stated | external
    reason: str = ""


@dataclass(frozen=True)
class Fidelity:
    """A study's table, or why there is none (``message``)."""

    rows: tuple[FidelityRow, ...] = ()
    problems: tuple[str, ...] = ()
    message: str = ""


def load_recipe(path: Path) -> list[RecipeRow]:
    with path.open(newline="") as handle:
        return [
            RecipeRow(r["stage"], r["setting"], r["paper_value"], r.get("source", ""), r.get("note", ""))
            for r in csv.DictReader(handle)
        ]


def recipe_file(run: RunConfig) -> Path | None:
    """``study.recipe`` under the shared data folder (``paths.data_dir``), or None."""
    if not run.study.recipe:
        return None
    return Path(run.paths.data_dir).expanduser() / run.study.recipe


def same(ours: str, paper: str) -> bool:
    """Equal word by word, case aside, numbers compared as numbers (1.0 is 1, 2e-6 is 2.0e-06)."""
    a, b = _TOKEN.findall(ours.lower()), _TOKEN.findall(paper.lower())
    return len(a) == len(b) and all(_token_equal(x, y) for x, y in zip(a, b, strict=True))


def _token_equal(x: str, y: str) -> bool:
    if x[0].isdigit() and y[0].isdigit():
        return math.isclose(float(x), float(y), rel_tol=1e-9)
    return x == y


def table(
    recipe: Sequence[RecipeRow],
    configs: StudyConfigs,
    deviations: Mapping[str, str],
    extractors: Mapping[str, Extractor] = EXTRACTORS,
) -> list[FidelityRow]:
    """One row per recipe row, in the recipe's order."""
    return [_row(r, configs, deviations.get(r.key, ""), extractors) for r in recipe]


def _row(r: RecipeRow, c: StudyConfigs, reason: str, extractors: Mapping[str, Extractor]) -> FidelityRow:
    if r.key not in extractors:
        return FidelityRow(r.stage, r.setting, r.paper, "-", NOT_COVERED, reason)
    if r.stage == "sft" and c.sft is None:
        ours = f"study.sft_model={c.sft_path}"
        return FidelityRow(r.stage, r.setting, r.paper, ours, EXTERNAL, reason)
    ours = extractors[r.key](c)
    if r.paper.strip().lower() == NOT_STATED:
        status = NOT_STATED
    elif same(ours, r.paper):
        status, reason = MATCH, ""
    else:
        status = DEVIATION if reason.strip() else NO_REASON
    return FidelityRow(r.stage, r.setting, r.paper, ours, status, reason)


def problems(rows: Sequence[FidelityRow], recipe: Sequence[RecipeRow], deviations: Mapping[str, str]) -> list[str]:
    """What the table cannot stand behind: uncovered rows, unexplained deviations, reasons
    that name no recipe row."""
    out = [
        f"{r.stage}.{r.setting}: no extractor reads it from the stage configs (rlvr/study/recipe_settings.py)"
        for r in rows
        if r.status == NOT_COVERED
    ]
    out += [
        f"{r.stage}.{r.setting}: {r.ours!r} differs from the paper's {r.paper!r} with no reason; "
        f"give study.deviations the reason ({r.stage}.{r.setting}: <why>) or use the paper's value"
        for r in rows
        if r.status == NO_REASON
    ]
    keys = {r.key for r in recipe}
    out += [f"study.deviations: {k!r} is no row of the recipe" for k in deviations if k not in keys]
    return out


def study_configs(run: RunConfig, stages: Iterable[Stage], configs: Mapping[str, RunConfig]) -> StudyConfigs:
    """The stage configs of a planned study, grouped by what each stage trains."""
    by_kind: dict[str, dict[str, RunConfig]] = {}
    expert_paths = set()
    sft_path = run.study.sft_model or ""
    for s in stages:
        by_kind.setdefault(s.kind, {})[s.name] = configs[s.name]
        if s.kind == "expert":
            expert_paths.add(str(s.out_dir / "final"))
        if s.kind == "sft":
            sft_path = str(s.out_dir / "final")
    if run.study.sft_model:
        sft_path = given_sft_path(run)
    return StudyConfigs(
        study=run,
        processes=accelerate_layout(run.study.accelerate).processes,
        sft=next(iter(by_kind.get("sft", {}).values()), None),
        sft_path=sft_path,
        expert_paths=frozenset(expert_paths),
        experts=by_kind.get("expert", {}),
        mixed=by_kind.get("mixed", {}),
        mt_opd=by_kind.get("distill", {}),
        merges=by_kind.get("merge", {}),
        evals=by_kind.get("eval", {}),
        report=next(iter(by_kind.get("report", {}).values()), None),
    )


def study_fidelity(run: RunConfig, stages: Sequence[Stage], configs: Mapping[str, RunConfig]) -> Fidelity | None:
    """The table of a study with ``study.recipe``; None without one; a message when the
    recipe file is missing."""
    path = recipe_file(run)
    if path is None:
        return None
    if not path.is_file():
        return Fidelity(
            message=f"fidelity table: no recipe file {path} (study.recipe under paths.data_dir;"
            " set RLVR_SHARED_DATA or paths.data_dir to the shared data folder)"
        )
    recipe = load_recipe(path)
    deviations = run.study.deviations
    rows = table(recipe, study_configs(run, stages, configs), deviations)
    return Fidelity(tuple(rows), tuple(problems(rows, recipe, deviations)))


def format_text(fidelity: Fidelity) -> str:
    """The dry run's table: one line a setting, the reason indented under a deviation."""
    if fidelity.message:
        return fidelity.message
    lines = ["fidelity to the recipe (paper | this study)"]
    for r in fidelity.rows:
        lines.append(f"  {r.stage + '.' + r.setting:<28} {r.status:<11} {r.paper} | {r.ours}")
        if r.reason and r.status != MATCH:
            lines.append(f"      why: {r.reason}")
    counts = {s: sum(r.status == s for r in fidelity.rows) for s in _statuses(fidelity.rows)}
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    lines += [f"  problem: {p}" for p in fidelity.problems]
    return "\n".join(lines)


def _statuses(rows: Sequence[FidelityRow]) -> list[str]:
    return list(dict.fromkeys(r.status for r in rows))


def to_markdown(rows: Sequence[FidelityRow]) -> str:
    """The table for the report and the docs."""
    lines = ["| stage | setting | paper | this study | status | reason |", "|---" * 6 + "|"]
    for r in rows:
        cells = (r.stage, f"`{r.setting}`", r.paper, r.ours, r.status, r.reason)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    # "<|im_end|>", "<folder>": text, not HTML or a column break
    return text.replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")


def record_fidelity(root: Path, fidelity: Fidelity | None) -> None:
    """Write the table where the report finds it; warn about what it cannot stand behind."""
    if fidelity is None:
        return
    for problem in (fidelity.message, *fidelity.problems):
        if problem:
            log.warning("fidelity: %s", problem)
    if fidelity.rows:
        (root / FIDELITY_FILE).write_text(to_markdown(fidelity.rows) + "\n")
