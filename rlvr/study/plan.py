"""The study's plan: SFT -> data stages -> experts -> mixed -> merges -> optional stages -> evaluation -> report.

Each stage is one existing entry point run as its own process with explicit Hydra overrides;
stages find each other's outputs through the folders this module assigns, never through
paths a person types.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.config import ConfigError, RunConfig
from rlvr.config.benchmark_names import check_benchmark_names
from tasks.schema import DOMAINS

log = logging.getLogger(__name__)

TRAINING_KINDS = ("sft", "expert", "mixed")
GRPO_KINDS = ("expert", "mixed", "cascade", "adaptive")  # stages that run rlvr.train
ARMS_BEYOND = ("cascade", "adaptive")  # optional arms (rlvr.study.arms) with arm_overrides


@dataclass(frozen=True)
class Stage:
    """One process of the study: what it runs, what it needs, and what it leaves behind."""

    name: str  # unique, filesystem-safe: sft, expert-math-seed0, merge-ties-seed0, eval-sft, ...
    kind: str  # sft | expert | mixed | merge | eval | report | an optional stage's kind
    entry: str  # module run with ``python -m`` (or ``accelerate launch -m``)
    overrides: tuple[str, ...]  # Hydra overrides, after the study's own
    deps: tuple[str, ...]
    out_dir: Path  # the folder the stage writes (cleared when the stage is invalidated)
    outputs: tuple[Path, ...]  # files that exist once the stage's outputs are complete
    total_steps: int | None = None  # training steps, for progress (set from the stage's config)
    progress_file: Path | None = None  # metrics.jsonl with a "step" per logged line
    # completion tokens the stage may sample (steps x prompts x samples x budget): among the
    # stages ready at once the largest starts first, so the longest arm is not the last to begin
    work: int = 0
    multiprocess: bool = False  # runs under ``accelerate launch`` when the study names a config
    # Runs alone with every core on a local machine: the SFT stage, which gates all the others
    # (sharing the cores with the base model's evaluation would leave one idle after it), and
    # the analyses, which wait for every evaluation.
    exclusive: bool = False
    # The model folder an evaluation reads: while a stage evaluating equal weights runs, this
    # one waits and then reuses its records (``rlvr.evaluation.reuse``) instead of sampling.
    weights: Path | None = None


@dataclass(frozen=True)
class ModelRef:
    """A model the plan produces or names: its label in the tables and where it will be."""

    label: str
    path: str  # a model folder (or "tiny" / a Hub id for the base model)
    stage: str | None  # the stage that makes it; None: exists before the study
    trained_to_think: bool = True  # False (the base model): no </think> gate at evaluation


@dataclass
class PlanContext:
    """What optional stages see: the study's settings and the models planned so far."""

    run: RunConfig
    root: Path
    sft: ModelRef
    experts: dict[tuple[str, int], ModelRef]  # (domain, seed) -> expert
    mixed: dict[int, ModelRef]  # seed -> mixed model
    extra_models: list[ModelRef] = field(default_factory=list)
    merges: list[ModelRef] = field(default_factory=list)  # every seed's merged models
    # what the data stages leave for the GRPO arms: per domain, the overrides that select
    # their rows, and the stages that write them
    data: dict[str, list[str]] = field(default_factory=dict)
    data_stages: list[str] = field(default_factory=list)


# Optional stages by name (``study.stages=[...]``): a builder returns its stages and the models
# they add to the evaluation. Distillation and the analyses register here.
OptionalStageBuilder = Callable[[PlanContext], tuple[list[Stage], list[ModelRef]]]
OPTIONAL_STAGES: dict[str, OptionalStageBuilder] = {}


def register_optional_stage(name: str, builder: OptionalStageBuilder) -> None:
    OPTIONAL_STAGES[name] = builder


# Data stages by name (``study.stages=[...]`` too), built right after SFT: a builder returns
# its stages and, per domain, the overrides that point a GRPO arm at the rows they write; every
# expert and mixed arm waits for them. The pass-rate filter registers here.
DataStageBuilder = Callable[[PlanContext], tuple[list[Stage], dict[str, Sequence[str]]]]
DATA_STAGES: dict[str, DataStageBuilder] = {}


def register_data_stage(name: str, builder: DataStageBuilder) -> None:
    DATA_STAGES[name] = builder


def quote(value: str) -> str:
    """A Hydra override value that parses as this exact string (paths hold '=', ',' or ' ')."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quoted_list(values: Sequence[str]) -> str:
    return "[" + ",".join(quote(v) for v in values) + "]"


def study_root(run: RunConfig) -> Path:
    return Path(run.study.out_dir or Path(run.paths.output_root) / run.experiment).resolve()


def benchmarks(run: RunConfig) -> list[str]:
    """``study.benchmarks``, else those of ``eval.tasks`` that belong to the study's domains;
    with neither, the embedded model's study evaluates on the micro-suite's held-out sets (the
    only benchmarks it can answer)."""
    if run.study.benchmarks:
        return list(run.study.benchmarks)
    from rlvr.evaluation.benchmarks import MICRO_PREFIX, benchmark_domain

    check_benchmark_names(run.eval.tasks, "eval.tasks")
    if not run.eval.tasks and run.model.name == "tiny":
        return [MICRO_PREFIX + d for d in run.study.domains]
    return [t for t in run.eval.tasks if benchmark_domain(t) in run.study.domains]


def check_plan_names(run: RunConfig) -> None:
    """Unknown domains, merge methods, benchmarks or optional stages fail here, with the
    valid names, before anything trains."""
    s = run.study
    if not s.domains:
        raise ConfigError(f"study.domains is empty; choose from: {', '.join(DOMAINS)}")
    if bad := [d for d in s.domains if d not in DOMAINS]:
        raise ConfigError(f"study.domains: unknown {bad}; valid domains: {', '.join(DOMAINS)}")
    if not s.seeds or len(set(s.seeds)) != len(s.seeds):
        raise ConfigError(f"study.seeds={s.seeds}: give one or more distinct integers")
    from rlvr.merging.presets import resolve

    for method in s.merges:
        try:
            resolve(method)
        except ValueError as err:
            raise ConfigError(f"study.merges: {err}") from None
    if s.merges and len(s.domains) < 2:
        raise ConfigError("study.merges needs at least two domains' experts to merge")
    _check_benchmarks(run)
    known = [*DOMAINS, "mixed", *ARMS_BEYOND]
    if bad := [a for a in s.arm_overrides if a not in known]:
        raise ConfigError(f"study.arm_overrides: unknown arms {bad}; arms are {known}")
    # an experiment file sets every arm; a study narrowed on the command line uses some of them
    arms = [*s.domains, *(["mixed"] if s.mixed or "adaptive" in s.stages else [])]
    arms += [a for a in ARMS_BEYOND if a in s.stages]
    if unused := [a for a, values in s.arm_overrides.items() if values and a not in arms]:
        log.warning("study.arm_overrides for %s unused: this study's arms are %s", unused, arms)
    if bad := [o for v in s.arm_overrides.values() for o in v if "=" not in str(o)]:
        raise ConfigError(f"study.arm_overrides: {bad} are not Hydra overrides (key=value)")
    if bad := [n for n in s.stages if n not in OPTIONAL_STAGES and n not in DATA_STAGES]:
        known = ", ".join(sorted({*OPTIONAL_STAGES, *DATA_STAGES})) or "none are installed yet"
        raise ConfigError(f"study.stages: unknown {bad}; optional stages: {known}")
    if s.jobs < 1:
        raise ConfigError(f"study.jobs={s.jobs}; run at least one stage at a time")
    if s.accelerate and not _accelerate_file(s.accelerate).is_file():
        raise ConfigError(f"study.accelerate={s.accelerate!r}: no conf/accelerate/{s.accelerate}.yaml")


def _check_benchmarks(run: RunConfig) -> None:
    check_benchmark_names(run.study.benchmarks, "study.benchmarks")
    if not benchmarks(run):
        raise ConfigError(
            f"no benchmarks for domains {run.study.domains}: set study.benchmarks=[...] or eval.tasks=[...]"
        )


def _accelerate_file(name: str) -> Path:
    from rlvr.runs.cli import CONF_DIR

    return Path(CONF_DIR) / "accelerate" / f"{name}.yaml"


def _domain_option(run: RunConfig, domains: Sequence[str]) -> str:
    return "domains=[" + ",".join(run.study.domain_prefix + d for d in domains) + "]"


def _training_stage(name: str, kind: str, entry: str, out: Path, extra: list[str], deps) -> Stage:
    overrides = [
        "eval.in_run=false",
        *extra,
        f"hydra.run.dir={quote(str(out))}",
    ]
    return Stage(
        name=name,
        kind=kind,
        entry=entry,
        overrides=tuple(overrides),
        deps=tuple(deps),
        out_dir=out,
        outputs=(out / "final" / "config.json", out / "summary.json"),
        progress_file=out / "metrics.jsonl",
        multiprocess=True,
        exclusive=kind == "sft",
    )


def _grpo_overrides(
    ctx: PlanContext, arm: str, domains: Sequence[str], seed: int, init: str | None = None
) -> list[str]:
    """An expert's or the mixed arm's own overrides: they differ in their domains, the rows the
    data stages selected for those domains, and the arm's own ``study.arm_overrides``. They
    start from the SFT model unless ``init`` names another (a cascade's previous stage)."""
    return [
        _domain_option(ctx.run, domains),
        f"init_from={quote(init or ctx.sft.path)}",
        f"trainer.seed={seed}",
        "resume=true",
        *(o for d in domains for o in ctx.data.get(d, ())),
        *arm_overrides_for(ctx.run.study.arm_overrides.get(arm, ()), domains),
    ]


def arm_overrides_for(overrides: Sequence[str], domains: Sequence[str]) -> list[str]:
    """An arm's overrides without those of domains it does not train (``domains.<d>.*``): the
    mixed arm's weights name every domain of the experiment file, and a study narrowed with
    ``study.domains`` composes only its own."""
    kept = []
    for override in overrides:
        key = str(override).split("=", 1)[0].lstrip("+~")
        parts = key.split(".")
        if parts[0] == "domains" and len(parts) > 2 and parts[1] not in domains:
            continue
        kept.append(str(override))
    return kept


def _data_stages(ctx: PlanContext) -> list[Stage]:
    """The data stages ``study.stages`` names; their overrides and names go to ``ctx``."""
    stages: list[Stage] = []
    for name in (n for n in ctx.run.study.stages if n in DATA_STAGES):
        built, overrides = DATA_STAGES[name](ctx)
        stages += built
        ctx.data_stages += [st.name for st in built]
        for domain, values in overrides.items():
            ctx.data.setdefault(domain, []).extend(values)
    return stages


def given_sft_path(run: RunConfig) -> str:
    """The folder ``study.sft_model`` names: a saved model, or a packaged model's name (an
    instruct model that starts the study as it is; converted into the cache on first use)."""
    from rlvr.models.packaged import ensure_packaged_model, is_packaged

    name = str(run.study.sft_model)
    if is_packaged(name):
        return str(ensure_packaged_model(name, Path(run.paths.cache_dir).expanduser() / "models"))
    return str(Path(name).expanduser().resolve())


def build_plan(run: RunConfig) -> list[Stage]:
    """Expand the study config into stages, in an order that respects every dependency."""
    check_plan_names(run)
    s, root = run.study, study_root(run)
    stages: list[Stage] = []
    if s.sft_model:
        sft = ModelRef("sft", given_sft_path(run), None)
    else:
        out = root / "sft"
        stages.append(
            _training_stage("sft", "sft", "rlvr.sft", out, [_domain_option(run, s.domains), "resume=true"], [])
        )
        sft = ModelRef("sft", str(out / "final"), "sft")
    ctx = PlanContext(run, root, sft, {}, {})
    stages += _data_stages(ctx)
    deps = [*([sft.stage] if sft.stage else []), *ctx.data_stages]
    for seed in s.seeds:
        for domain in s.domains:
            name = f"expert-{domain}-seed{seed}"
            out = root / "experts" / f"{domain}-seed{seed}"
            extra = _grpo_overrides(ctx, domain, [domain], seed)
            stages.append(_training_stage(name, "expert", "rlvr.train", out, extra, deps))
            ctx.experts[(domain, seed)] = ModelRef(f"{domain}-seed{seed}", str(out / "final"), name)
        if s.mixed:
            name, out = f"mixed-seed{seed}", root / "mixed" / f"seed{seed}"
            extra = _grpo_overrides(ctx, "mixed", s.domains, seed)
            stages.append(_training_stage(name, "mixed", "rlvr.train", out, extra, deps))
            ctx.mixed[seed] = ModelRef(f"mixed-seed{seed}", str(out / "final"), name)
    merged = [m for seed in s.seeds for m in _merge_stages(run, ctx, seed, stages)]
    ctx.merges += merged
    optional = list(ctx.data_stages)  # the report waits for them too (it includes the analyses)
    for name in (n for n in s.stages if n in OPTIONAL_STAGES):
        extra_stages, extra_models = OPTIONAL_STAGES[name](ctx)
        stages += extra_stages
        optional += [st.name for st in extra_stages]
        ctx.extra_models += extra_models
    models = _models_to_evaluate(run, ctx, merged)
    evals = [eval_stage(run, root, m) for m in models]
    stages += evals
    stages.append(_report_stage(run, root, [*(e.name for e in evals), *optional]))
    return _dependency_order(stages)


def _dependency_order(stages: list[Stage]) -> list[Stage]:
    """The stages in plan order, except that a stage waiting for later ones (an analysis of
    the evaluations) moves after them; a dependency on no planned stage fails here."""
    names = {s.name for s in stages}
    if missing := sorted({d for s in stages for d in s.deps} - names):
        raise ConfigError(f"the plan has no stage {missing}, which others wait for")
    placed: list[Stage] = []
    done: set[str] = set()
    todo = list(stages)
    while todo:
        ready = next((s for s in todo if set(s.deps) <= done), None)
        if ready is None:
            raise ConfigError(f"the plan's stages wait for each other: {[s.name for s in todo]}")
        placed.append(ready)
        done.add(ready.name)
        todo.remove(ready)
    return placed


def eval_stage_name(label: str) -> str:
    return f"eval-{label}"


def _merge_stages(run: RunConfig, ctx: PlanContext, seed: int, stages: list[Stage]):
    experts = [ctx.experts[(d, seed)] for d in run.study.domains]
    for method in run.study.merges:
        name, out = f"merge-{method}-seed{seed}", ctx.root / "merges" / f"{method}-seed{seed}"
        stages.append(merge_stage(ctx, name, method, experts, seed, out))
        yield ModelRef(f"{method}-seed{seed}", str(out), name)


def merge_stage(ctx: PlanContext, name: str, method: str, experts: Sequence[ModelRef], seed: int, out: Path) -> Stage:
    """``rlvr.merge`` of ``experts`` onto the SFT model with a preset or mergekit method."""
    from rlvr.runs.cli import CONF_DIR

    preset = (Path(CONF_DIR) / "merge" / f"{method}.yaml").is_file()
    overrides = (
        f"merge={method}" if preset else f"merge.method={method}",
        f"merge.name={method}",
        f"merge.base={quote(ctx.sft.path)}",
        f"merge.models={quoted_list([e.path for e in experts])}",
        f"merge.seed={seed}",
        f"merge.out_dir={quote(str(out))}",
    )
    deps = tuple(e.stage for e in experts if e.stage)
    return Stage(name, "merge", "rlvr.merge", overrides, deps, out, (out / "merge.json",))


def _models_to_evaluate(run: RunConfig, ctx: PlanContext, merged: list[ModelRef]):
    base = [ModelRef("base", run.model.name, None, False)] if run.study.evaluate_base else []
    return [
        *base,
        ctx.sft,
        *ctx.experts.values(),
        *ctx.mixed.values(),
        *merged,
        *ctx.extra_models,
    ]


def eval_stage(run: RunConfig, root: Path, model: ModelRef, names: Sequence[str] | None = None) -> Stage:
    """``model`` evaluated on ``names`` (default: the study's benchmarks) into ``root/eval``."""
    out = root / "eval" / model.label
    names = list(names) if names is not None else benchmarks(run)
    overrides = (
        _domain_option(run, run.study.domains),
        f"eval.models=[{quote(f'{model.label}={model.path}')}]",
        f"eval.tasks=[{','.join(names)}]",
        f"eval.out_dir={quote(str(root))}",
        # a model never trained to think is graded as the paper grades its base row: ungated
        *(() if model.trained_to_think else ("eval.format_gate=false",)),
    )
    deps = (model.stage,) if model.stage else ()
    outputs = tuple(out / f"{b}.json" for b in names)
    name = eval_stage_name(model.label)
    weights = Path(model.path) if Path(model.path).is_absolute() else None  # not "tiny", a Hub id
    return Stage(name, "eval", "rlvr.evaluate", overrides, deps, out, outputs, weights=weights)


def _report_stage(run: RunConfig, root: Path, deps: list[str]) -> Stage:
    out = root / "report"
    overrides = (_domain_option(run, run.study.domains), f"report.study_dir={quote(str(root))}")
    outputs = tuple(out / f"{t}.md" for t in ("main_table", "merge_table", "diff_table", "cost_table"))
    return Stage("report", "report", "rlvr.report", overrides, tuple(deps), out, outputs)
