"""Arms beyond the paper as optional study stages: cascade RL and the adaptive mixture.

``study.stages=[cascade]``: per seed, one GRPO stage per domain in ``study.cascade_order``
(Nemotron-Cascade, arXiv 2512.13607), each from the previous stage's final model with that
domain's expert settings (``study.arm_overrides.<domain>``), then ``arm_overrides.cascade``.
Every stage's model is evaluated (``cascade@<k>-<domain>-seed<s>``; the last one is the arm's
row, ``cascade-seed<s>``), so the report shows whether a later stage undoes an earlier one.
An empty ``cascade_order`` puts the domain with the least room first: the SFT model's
pass@k - Avg@k on each domain's held-out sets, read from the study's own evaluation of it
(or ``python -m rlvr.calibrate``'s) when one exists; the order a study first ran with is kept
in ``<study>/cascade/order.json`` so a later run resumes the same stages.

``study.stages=[adaptive]``: per seed, the mixed arm's training (its overrides) with
``mixture.mode=adaptive`` (``rlvr.data.adaptive``), then ``arm_overrides.adaptive``.
"""

from __future__ import annotations

import json
import logging
import statistics
from pathlib import Path

from rlvr.config import ConfigError, RunConfig
from rlvr.study.plan import (
    ModelRef,
    PlanContext,
    Stage,
    _grpo_overrides,
    _training_stage,
    register_optional_stage,
)

log = logging.getLogger(__name__)

ORDER_FILE = Path("cascade") / "order.json"


def cascade_order(run: RunConfig, root: Path) -> tuple[list[str], str]:
    """The cascade's domain order and where it came from."""
    s = run.study
    if s.cascade_order:
        if sorted(s.cascade_order) != sorted(s.domains):
            raise ConfigError(
                f"study.cascade_order={s.cascade_order} must name each of study.domains "
                f"{s.domains} once (or be empty: the least room first)"
            )
        return list(s.cascade_order), "study.cascade_order"
    recorded = root / ORDER_FILE
    if recorded.is_file():
        kept = json.loads(recorded.read_text())
        if sorted(kept["order"]) == sorted(s.domains):
            return list(kept["order"]), f"{recorded} ({kept['source']})"
    for folder in (root / "eval", root / "calibration" / "eval"):  # the study's, rlvr.calibrate's
        room = _room(folder, s.domains)
        if room:
            order = sorted(s.domains, key=lambda d: (room.get(d, float("inf")), s.domains.index(d)))
            return order, f"least room first, from the SFT model's scores in {folder}"
    log.warning(
        "cascade: no evaluation of the SFT model in %s yet, so the cascade follows "
        "study.domains; set study.cascade_order to choose, or run python -m rlvr.calibrate "
        "first for the least-room-first order",
        root,
    )
    return list(s.domains), "study.domains (no SFT evaluation yet)"


def _room(folder: Path, domains: list[str]) -> dict[str, float]:
    """Per domain: the SFT model's mean pass@k - Avg@k over its held-out sets in ``folder``."""
    per: dict[str, list[float]] = {}
    for path in sorted((folder / "sft").glob("*.json")) if folder.is_dir() else []:
        if path.name == "model.json":
            continue
        summary = json.loads(path.read_text())
        avg, pass_k = summary.get("avg_at_k"), summary.get("pass_at_k")
        if summary.get("domain") in domains and avg is not None and pass_k is not None:
            per.setdefault(summary["domain"], []).append(float(pass_k) - float(avg))
    return {d: statistics.mean(v) for d, v in per.items()}


def record_cascade_order(run: RunConfig, root: Path) -> None:
    """Keep the order this study runs its cascade in (called when the study really runs)."""
    if "cascade" not in run.study.stages or run.study.cascade_order:
        return
    order, source = cascade_order(run, root)
    path = root / ORDER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"order": order, "source": source}, indent=2))


def cascade_stages(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """Per seed, one GRPO stage per domain in order, each from the last one's model."""
    run = ctx.run
    order, source = cascade_order(run, ctx.root)
    log.info("cascade order %s (%s)", " -> ".join(order), source)
    deps_data = list(ctx.data_stages)
    stages, models = [], []
    for seed in run.study.seeds:
        previous = ctx.sft
        for k, domain in enumerate(order, 1):
            last = k == len(order)
            name = f"cascade-{k}-{domain}-seed{seed}"
            out = ctx.root / "cascade" / f"seed{seed}" / f"{k}-{domain}"
            extra = _grpo_overrides(ctx, domain, [domain], seed, init=previous.path)
            extra += [str(o) for o in run.study.arm_overrides.get("cascade", ())]
            deps = [*([previous.stage] if previous.stage else []), *deps_data]
            stages.append(_training_stage(name, "cascade", "rlvr.train", out, extra, deps))
            label = f"cascade-seed{seed}" if last else f"cascade@{k}-{domain}-seed{seed}"
            previous = ModelRef(label, str(out / "final"), name)
            models.append(previous)
    return stages, models


def adaptive_stages(ctx: PlanContext) -> tuple[list[Stage], list[ModelRef]]:
    """Per seed, the mixed arm's run with adaptive domain weights."""
    run = ctx.run
    deps = [*([ctx.sft.stage] if ctx.sft.stage else []), *ctx.data_stages]
    stages, models = [], []
    for seed in run.study.seeds:
        name, out = f"adaptive-seed{seed}", ctx.root / "adaptive" / f"seed{seed}"
        mixed = _grpo_overrides(ctx, "mixed", run.study.domains, seed)
        extra = [o for o in mixed if not _sets_mode(o)] + ["mixture.mode=adaptive"]
        extra += [str(o) for o in run.study.arm_overrides.get("adaptive", ())]
        stages.append(_training_stage(name, "adaptive", "rlvr.train", out, extra, deps))
        models.append(ModelRef(name, str(out / "final"), name))
    return stages, models


def _sets_mode(override: str) -> bool:
    """Whether an override chooses how the mixture is drawn (the adaptive arm decides that)."""
    key = override.split("=", 1)[0].lstrip("+~")
    return key in ("mixture", "mixture.mode") or key.startswith("mixture.schedule")


register_optional_stage("cascade", cascade_stages)
register_optional_stage("adaptive", adaptive_stages)
