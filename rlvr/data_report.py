"""Data report: per-domain counts, prompt lengths and dropped rows of the configured tasks.

python -m rlvr.data_report domains=[math,code,science,instruction,agent]
python -m rlvr.data_report experiment=m2rl_rl 'domains=[m2rl/math,m2rl/code]'

python -m rlvr.data_report 'domains=[m2rl/agent]' '+domains.agent.data_files=[train.jsonl]'

Loads exactly what ``rlvr.train`` would (train tasks capped at ``mixture.train_size``, eval
tasks at ``mixture.heldout_size``, micro-suite difficulty from ``mixture.difficulty``, local
copies from ``domains.<d>.data_files``, placeholders resolved from ``resolve_files``) and
prints, for the train and eval parts separately, one line per domain (rows, prompt length
in characters), one line per source (read, kept, dropped, duplicates), every drop reason
with its count, and the unscorable rows: rows that loaded but whose verifier or environment
name does not resolve, or whose dry check fails (an empty completion verified against the
reference, or the environment's episode opened on the row, must not be a verifier error).
Tasks that cannot load (e.g. Hub datasets offline) are listed with the reason and make the
exit status 1; so do unscorable rows.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.data.rows import load_task

log = logging.getLogger(__name__)


@dataclass
class Part:
    """The rows of one part (train or eval) of every domain, with their load accounting."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    quality: Any = None  # tasks.quality.QualityLog
    failures: dict[str, str] = field(default_factory=dict)  # task -> reason
    unscorable: dict[str, Counter] = field(default_factory=dict)  # domain -> reason -> rows


def load_part(run: RunConfig, part: str) -> Part:
    """``part`` is "train" (``train_tasks``) or "eval" (``eval_tasks``, held-out split)."""
    from tasks.quality import QualityLog

    out = Part(part, quality=QualityLog())
    split = "train" if part == "train" else "heldout"
    limit = run.mixture.train_size if part == "train" else run.mixture.heldout_size
    for domain, dc in sorted(run.domains.items()):
        tasks = dc.train_tasks if part == "train" else dc.eval_tasks
        for task in tasks:
            try:
                out.rows += load_task(run, domain, task, split=split, n=limit, quality=out.quality)
            except Exception as err:  # noqa: BLE001  (a report lists every task it cannot load)
                out.failures[task] = f"{type(err).__name__}: {err}"
                log.error("%s (%s): cannot load: %s", task, domain, err)
    for row in out.rows:
        reason = unscorable_reason(row, run.domains[row["domain"]].verifier_options)
        if reason:
            out.unscorable.setdefault(row["domain"], Counter())[reason] += 1
    return out


def unscorable_reason(row: dict[str, Any], options: dict[str, Any]) -> str | None:
    """Why a loaded row could not be scored, or None: names that do not resolve, or a dry
    check that ends in a verifier error (empty completion; for environment rows, the episode
    the row opens, scored before any call)."""
    from rlvr.rewards.scoring import VerifierCache
    from tasks.environments import UnknownEnvironmentError, episode_verdict, get_environment_class
    from tasks.schema import reference_of
    from verifiers import Status, UnknownVerifierError, verify

    try:
        verifier = VerifierCache(options)(row["verifier"])
    except UnknownVerifierError:
        return f"unknown verifier {row['verifier']!r}"
    if row.get("environment"):
        try:
            environment = get_environment_class(row["environment"])()
        except UnknownEnvironmentError:
            return f"unknown environment {row['environment']!r}"
        environment.reset(**row)
        verdict = episode_verdict(environment)
        if verdict is None:
            return f"environment {row['environment']!r} found no task in the reference"
    else:
        verdict = verify("", reference_of(row), verifier)
    if verdict.status is Status.ERROR:
        return f"{row['verifier']}: {verdict.details[:120]}"
    return None


def overlap(train: Part, heldout: Part) -> dict[str, int]:
    """Eval rows per domain whose id or normalised prompt also appears in training."""
    from tasks.quality import normalise_prompt, prompt_text

    seen = {r["id"] for r in train.rows} | {normalise_prompt(prompt_text(r)) for r in train.rows}
    leaks: dict[str, int] = {}
    for r in heldout.rows:
        if r["id"] in seen or normalise_prompt(prompt_text(r)) in seen:
            leaks[r["domain"]] = leaks.get(r["domain"], 0) + 1
    return leaks


def format_part(part: Part) -> str:
    from tasks.quality import domain_stats, format_report

    lines = [f"== {part.name}: {len(part.rows)} rows =="]
    if part.rows:
        lines.append(format_report(domain_stats(part.rows), part.quality))
    for source, counts in sorted(part.quality.sources.items()):
        lines += [f"dropped  {source}  {n}  {why}" for why, n in counts.dropped.most_common()]
    for domain, reasons in sorted(part.unscorable.items()):
        lines += [f"unscorable  {domain}  {n}  {why}" for why, n in reasons.most_common()]
    lines += [f"unavailable  {task}: {reason}" for task, reason in sorted(part.failures.items())]
    return "\n".join(lines)


def build_report(run: RunConfig) -> tuple[str, bool]:
    """The report text, and whether every configured task loaded into scorable rows."""
    train, heldout = load_part(run, "train"), load_part(run, "eval")
    leaks = overlap(train, heldout)
    lines = [
        f"data report  experiment={run.experiment}  domains={','.join(sorted(run.domains))}  "
        f"train_size={run.mixture.train_size}  heldout_size={run.mixture.heldout_size}",
        format_part(train),
        format_part(heldout),
        "train/eval overlap (id or prompt): " + (", ".join(f"{d}: {n}" for d, n in sorted(leaks.items())) or "none"),
    ]
    parts = (train, heldout)
    return "\n\n".join(lines), not any(p.failures or p.unscorable for p in parts)


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    def body(run: RunConfig, run_dir: Path) -> None:
        text, complete = build_report(run)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "data_report.txt").write_text(text + "\n")
        sys.stdout.write(text + "\n")
        if not complete:
            sys.exit(1)

    hydra_entry("data", body)


if __name__ == "__main__":
    main()
