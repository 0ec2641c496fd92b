"""``python -m rlvr.study experiment=<study>``: the whole mix-or-merge study, resumable.

Compose the study config, expand it into stages, hash every stage's config, reconcile with
what the study folder already holds, run what is left through the configured launcher, and
print the report's main table with the mixed/separate cost ratio and where every file is.
"""

from __future__ import annotations

import fcntl
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from hydra.errors import HydraException

from rlvr.config import ConfigError, RunConfig
from rlvr.planning import StagePlan, assumptions, check_fits, format_plan
from rlvr.planning.budget import (
    StageBudget,
    check_budgets,
    format_budgets,
    format_gpu_hours,
    paper_compute,
)
from rlvr.study import slurm
from rlvr.study.arms import record_cascade_order
from rlvr.study.commands import (
    accelerate_layout,
    command,
    hash_plan,
    hashed_settings,
    machines,
    node_argv,
    processes,
    readable_settings,
    sampled_tokens,
    stage_config,
    training_steps,
    user_overrides,
)
from rlvr.study.data_check import check_training_rows
from rlvr.study.environment import environment
from rlvr.study.fidelity import Fidelity, format_text, record_fidelity, study_fidelity
from rlvr.study.launcher_choice import make_launcher
from rlvr.study.launchers import StageJob, thread_env
from rlvr.study.manifest import (
    MARKERS,
    Manifest,
    adopt_earlier_hashes,
    reconcile,
    recorded_root,
)
from rlvr.study.plan import Stage, build_plan, study_root
from rlvr.study.preflight import preflight
from rlvr.study.progress import Progress, closing_screen, print_folder_preview, print_plan
from rlvr.study.resources import resource_plan, slurm_by_kind, stage_budgets
from rlvr.study.scheduler import Interrupted, run_stages
from rlvr.study.study_config import load_study

log = logging.getLogger("rlvr.study")


class StudyPlan(NamedTuple):
    run: RunConfig
    stages: list[Stage]
    hashes: dict[str, str]
    earlier: dict[str, str]  # the hashes before study folders could move (absolute paths)
    settings: dict[str, dict[str, str]]  # what each hash covers, readable (rerun reasons)
    commands: dict[str, list[str]]
    resources: list[StagePlan]  # memory per device and step time of every stage
    fidelity: Fidelity | None = None  # the recipe's settings beside the stages' (study.recipe)
    slurm_by_kind: dict[str, dict] = {}  # SLURM parameters per stage kind, over study.slurm
    budgets: list[StageBudget] = []  # training stages' time against their SLURM budget


def plan(argv: list[str]) -> StudyPlan:
    run = load_study(argv)
    base = user_overrides(argv)
    planned = build_plan(run)
    configs = {s.name: stage_config(base, s) for s in planned}
    # progress counts the steps each training stage's own config sets (arm overrides included)
    stages = [
        replace(
            s,
            total_steps=training_steps(configs[s.name], s.kind),
            work=sampled_tokens(configs[s.name], s.kind),
        )
        if s.progress_file
        else s
        for s in planned
    ]
    root = study_root(run)
    hashed = {s.name: hashed_settings(configs[s.name], s) for s in stages}  # resolved once
    hashes = hash_plan(stages, configs, root, settings=hashed)
    earlier = hash_plan(stages, configs, root, str(recorded_root(root) or root), hashed)
    settings = {name: readable_settings(part, root) for name, part in hashed.items()}
    commands = {s.name: command(s, base, run.study.accelerate) for s in stages}
    resources = resource_plan(stages, configs, run)
    fidelity = study_fidelity(run, stages, configs)
    by_kind = slurm_by_kind(run, stages, configs)
    budgets = stage_budgets(run, stages, configs, resources, by_kind)
    return StudyPlan(run, stages, hashes, earlier, settings, commands, resources, fidelity, by_kind, budgets)


def budget_text(run: RunConfig, budgets: list[StageBudget], by_kind: dict[str, dict] | None = None) -> str:
    """The SLURM budget table and GPU-hours per arm beside the paper's (its compute.csv,
    next to ``study.recipe`` under ``paths.data_dir``)."""
    lines = [format_budgets(budgets)] if run.study.launcher == "slurm" and budgets else []
    folder = Path(run.paths.data_dir).expanduser()
    recipe = Path(run.study.recipe).parent if run.study.recipe else None
    paper = paper_compute(folder / recipe / "compute.csv") if recipe else {}
    if hours := format_gpu_hours(budgets, paper):
        lines.append(hours)
    if run.study.launcher == "slurm" and by_kind:
        lines.append("SLURM parameters by stage kind, over study.slurm")
        lines += [f"  {kind:<8} {params}" for kind, params in by_kind.items()]
    return "\n".join(lines)


def _lock(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigError(f"another rlvr.study is running on {root}; wait for it or stop it") from None
    return handle


def check_before_queueing(planned: StudyPlan, argv: list[str]) -> None:
    """Every check a study must pass before anything is written or queued: rows for each
    planned domain, memory, the SLURM budget, vLLM servers and the Hub cache. All of them run
    (a dry run prints each section), and one error lists every problem found."""
    run, stages, s = planned.run, planned.stages, planned.run.study
    out = sys.stdout if s.dry_run else None
    problems: list[str] = []

    def check(step, *args) -> bool:
        try:
            step(*args)
        except ConfigError as err:
            problems.append(str(err))
            return False
        return True

    if not s.cancel:  # an empty domain
        check(check_training_rows, run, argv, stages, sys.stdout)
    fits = check(check_fits, planned.resources)  # a stage that cannot fit its device
    if fits and s.launcher == "slurm" and not s.cancel:  # a stage that cannot end in its limits
        check(check_budgets, planned.budgets)  # (a stage that does not fit has no step time)
    check(preflight, run, argv, stages, planned.resources, out)  # vLLM servers, the Hub cache
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problems stop this study:\n- " + "\n- ".join(problems))


def run_study(argv: list[str]) -> int:
    planned = plan(argv)
    run, stages, hashes, earlier, settings, commands, resources, fidelity = planned[:8]
    s, root = run.study, study_root(run)
    layout = accelerate_layout(s.accelerate)
    spread = {st.name: machines(st, s.accelerate) for st in stages}
    if layout.machines > 1 and s.launcher != "slurm":
        raise ConfigError(
            f"study.accelerate={s.accelerate} spans {layout.machines} machines: run it with "
            "study.launcher=slurm, or pick a one-node config (gpu_fsdp2)"
        )
    if s.dry_run:
        per_node = {
            name: node_argv(commands[name], "<k>", "<the job's first node>", layout.port)
            for name, n in spread.items()
            if n > 1
        }
        print_plan(stages, {**commands, **per_node}, sys.stdout, spread)
        if (root / MARKERS).is_dir():  # what a run would reuse and rerun in this folder
            seen = reconcile(root, stages, hashes, s.force, settings, read_only=True, earlier=earlier)
            print_folder_preview(root, stages, seen.reuse, seen.stale, sys.stdout)
        sys.stdout.write(format_plan(resources, assumptions(run.trainer)) + "\n")
        if budget := budget_text(run, planned.budgets, planned.slurm_by_kind):
            sys.stdout.write(budget + "\n")
        if fidelity:
            sys.stdout.write(format_text(fidelity) + "\n")
    check_before_queueing(planned, argv)
    if s.dry_run:
        return 0
    lock = _lock(root)
    if s.cancel:
        cancelled = slurm.cancel_study(root)
        sys.stdout.write(f"cancelled {len(cancelled)} SLURM jobs of {root}: {' '.join(cancelled) or '-'}\n")
        return 0
    if adopted := adopt_earlier_hashes(root, stages, hashes, earlier):
        log.info("%d finished stages kept through the new config hashing", len(adopted))
    reconciled = reconcile(root, stages, hashes, s.force, settings)
    record_cascade_order(run, root)  # a later run plans the same cascade stages
    record_fidelity(root, fidelity)  # the report's recipe section
    submitted = slurm.submitted_jobs(root)  # what a driver that died left queued or running
    summary = {
        "experiment": run.experiment,
        "argv": argv,
        "launcher": s.launcher,
        **vars(s),
        "environment": environment(),
    }
    manifest = Manifest.create(root, summary, stages, hashes, commands)
    launcher = make_launcher(s.launcher, root, s.jobs, s.slurm, planned.slurm_by_kind, s.warm_start)
    jobs = {
        st.name: StageJob(
            root,
            st,
            hashes[st.name],
            commands[st.name],
            thread_env(s.jobs, launcher, st),
            str(Path.cwd()),  # stages see relative paths as the command line meant them
            processes(st, s.accelerate),
            spread[st.name],
            layout.port,
            settings[st.name],
        )
        for st in stages
    }
    sys.stdout.write(f"study {run.experiment}: {len(stages)} stages in {root} ({launcher.name})\n")
    follow = slurm.still_running(submitted, hashes, reconciled.reuse) if s.launcher == "slurm" else {}
    if follow:
        sys.stdout.write(
            f"following {len(follow)} SLURM jobs an earlier run submitted: "
            f"{', '.join(f'{n} ({j})' for n, j in follow.items())}\n"
        )
    try:
        status = run_stages(
            stages,
            jobs,
            launcher,
            manifest,
            reconciled.reuse,
            reconciled.stale,
            Progress(stages),
            s.poll_s,
            {n: launcher.attach(j) for n, j in follow.items()},
        )
    finally:
        launcher.close()
    sys.stdout.write("\n" + closing_screen(root, stages, status, manifest.entries) + "\n")
    lock.close()
    return 0 if all(v in ("done", "skipped") for v in status.values()) else 1


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    try:
        code = run_study(sys.argv[1:])
    except (ConfigError, HydraException) as err:  # Hydra: an override that does not compose
        log.error("config error: %s", err)
        code = 2
    except Interrupted as err:
        log.error("study interrupted: %s", err)
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
