"""MT-OPD stage: the student samples on the mixed prompts; each row's teacher is its domain's expert.

python -m rlvr.distill experiment=tiny_mt_opd
python -m rlvr.distill experiment=tiny_mt_opd distill=m2rl model=qwen3-4b-base ...
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Counters:
    """What a distillation run counts beside TRL: verifier errors, reward time, its start."""

    budget: Any  # rlvr.rewards.bridge.ErrorBudget
    timer: Any  # rlvr.rewards.bridge.StepTimer
    started: float


def distill(run: RunConfig, run_dir: Path) -> dict:
    """The whole stage as a recipe; returns the summary written to ``summary.json``."""
    from rlvr.distillation.teachers import check_tokenizers, load_teachers
    from rlvr.runs.folders import configure_tracking, prepare_run_dir
    from rlvr.training import stages

    started = time.perf_counter()
    prepare_run_dir(run, run_dir)
    configure_tracking(run, run_dir)
    student_path = stages.starting_model(run)  # init_from: the SFT model
    check_tokenizers(run, student_path)  # tokenizers only: before any model loads
    data = stages.domain_data(run)
    scorer = stages.make_scorer(run)
    teachers = load_teachers(run)  # loaded by the trainer: sharded as they load under FSDP2

    evaluate = stages.heldout_eval if run.eval.in_run else stages.no_eval
    evals = {"start": evaluate(run, student_path, data, scorer)}
    trainer, counters = distillation_trainer(run, student_path, teachers, data, scorer, run_dir)
    kl = {"start": teacher_kl(run, student_path, teachers, data)}
    final_path, facts = train_student(trainer, counters, run, run_dir)
    evals["distilled"] = evaluate(run, final_path, data, scorer)
    kl["distilled"] = teacher_kl(run, final_path, teachers, data)

    d = run.distill
    facts_extra = {
        "distill": {
            "teachers": {name: d.teachers.get(name) for name in sorted(run.domains)},
            "teacher_device": d.teacher_device,
            # parameter elements of each teacher on this rank ("here") and in all ("total")
            "teacher_elements": {name: dict(getattr(t, "elements", {})) for name, t in sorted(teachers.items())},
            "objective": d.objective,
            "heldout_kl": kl,
        }
    }
    total = time.perf_counter() - started
    summary = stages.summarise(run, run_dir, evals, facts, 0.0, total, facts_extra, verb="distill")
    stages.report(summary)
    return summary


def teacher_kl(run: RunConfig, model_path: str, teachers: dict, data: dict) -> dict[str, Any]:
    """Held-out per-token KL(student || own teacher) per domain, on every rank: each scores
    every world-th held-out row with its own copy of the student, the sums are added over
    the ranks, and every rank returns the same numbers. Sharded teachers run in lockstep
    (``rlvr.distillation.heldout``). Nothing with teacher servers (no full distribution)."""
    from rlvr.distillation.heldout import add_sums, batches_per_rank, kl_means, kl_sums
    from rlvr.models.chat_format import ChatFormat
    from rlvr.models.loading import load_model, load_tokenizer
    from rlvr.runs.folders import all_gather, local_device, rank_and_world

    rows = [r for dd in data.values() for r in dd.heldout]
    models = {name: getattr(t, "model", None) for name, t in teachers.items()}
    if not (run.eval.in_run and rows) or any(m is None for m in models.values()):
        return {}
    e = run.eval
    rank, world = rank_and_world()
    sharded = any(getattr(t, "sharded", False) for t in teachers.values())
    lockstep = (batches_per_rank(len(rows), world, e.batch_size, e.k), rows[0])
    student = load_model(model_path, run.model).to(local_device())
    sums = kl_sums(
        student,
        models,
        load_tokenizer(model_path, run.model),
        rows[rank::world],
        samples=e.k,
        max_new_tokens=e.max_new_tokens,
        temperature=run.distill.temperature,
        seed=e.seed + rank,
        batch_size=e.batch_size,
        chat=ChatFormat.of(run.model),
        lockstep=lockstep if sharded else None,
    )
    del student
    return kl_means(add_sums(all_gather([sums])))


def distillation_trainer(
    run: RunConfig, start_path: str, teachers: dict, data: dict, scorer, run_dir: Path
) -> tuple[Any, Counters]:
    """TRL's distillation trainer from ``start_path`` with routed teachers (local ones loaded
    and prepared here); (trainer, its counters for ``train_student``)."""
    from datasets import Dataset

    from rlvr.distillation.trainer import RoutedDistillationTrainer, build_distill_config
    from rlvr.models.loading import load_tokenizer
    from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
    from rlvr.runs.folders import MetricsFileCallback
    from rlvr.tracking.wandb_run import open_stage_run
    from rlvr.training.stages import _peft_config, _sampler_factory

    started = time.perf_counter()
    budget = ErrorBudget(run.trainer.max_infra_error_rate, run.trainer.infra_error_min_samples)
    timer = StepTimer()
    # Agent rows keep their text tool listing: the student answers in one turn (no environment).
    dataset = Dataset.from_list([r for dd in data.values() for r in dd.train])
    trainer_ref: dict[str, Any] = {}
    tracker = open_stage_run(run, run_dir, "distill")  # None unless logger=wandb
    trainer = RoutedDistillationTrainer(
        model=start_path,
        args=build_distill_config(run, run_dir / "checkpoints"),
        train_dataset=dataset,
        processing_class=load_tokenizer(start_path, run.model),
        peft_config=_peft_config(run),
        callbacks=[MetricsFileCallback(run_dir / "metrics.jsonl", trainer_ref, timer, tracker)],
        teachers=teachers,
        objective=run.distill.objective,
        samples_per_prompt=run.distill.samples_per_prompt,
        sampler_factory=_sampler_factory(run, dataset),
        reward_funcs=build_reward_functions(sorted(run.domains), scorer, budget, timer, run.algo.format_gate),
    )
    trainer_ref["trainer"] = trainer
    return trainer, Counters(budget, timer, started)


def train_student(trainer: Any, counters: Counters, run: RunConfig, run_dir: Path) -> tuple[str, dict[str, Any]]:
    """Train (resuming where a checkpoint is), save ``final/``; (final folder, facts)."""
    from rlvr.training.checkpoints import resume_checkpoint, train_from
    from rlvr.training.stages import _save_final

    budget, timer, started = counters.budget, counters.timer, counters.started
    train_from(trainer, resume_checkpoint(run, run_dir), run.trainer.save_every_min)
    final = run_dir / "final"
    _save_final(trainer, final, run)
    facts = {
        "steps": trainer.state.global_step,
        "seconds": time.perf_counter() - started,
        "generation_s": trainer.generation_seconds,
        "reward_s": timer.reward_s,
        "teacher_s": trainer.teacher_seconds,  # teacher forwards, inside the update's time
        "infra_errors": dict(budget.errors),
        "verifications": dict(budget.seen),
    }
    return str(final), facts


def distill_student(
    run: RunConfig, start_path: str, teachers: dict, data: dict, scorer, run_dir: Path
) -> tuple[str, dict[str, Any]]:
    """TRL's distillation loop from ``start_path`` with routed teachers; (final folder, facts)."""
    trainer, counters = distillation_trainer(run, start_path, teachers, data, scorer, run_dir)
    return train_student(trainer, counters, run, run_dir)


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("distill", distill)


if __name__ == "__main__":
    main()
