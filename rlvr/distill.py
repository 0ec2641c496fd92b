"""MT-OPD stage: the student samples on the mixed prompts; each row's teacher is its domain's expert.

python -m rlvr.distill experiment=tiny_mt_opd
python -m rlvr.distill experiment=tiny_mt_opd distill=m2rl model=qwen3-4b-base ...
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def distill(run: RunConfig, run_dir: Path) -> dict:
    """The whole stage as a recipe; returns the summary written to ``summary.json``."""
    from rlvr.distillation.teachers import check_tokenizers, load_teachers
    from rlvr.runs.folders import configure_tracking, local_device, prepare_run_dir
    from rlvr.training import stages

    started = time.perf_counter()
    prepare_run_dir(run, run_dir)
    configure_tracking(run, run_dir)
    student_path = stages.starting_model(run)  # init_from: the SFT model
    check_tokenizers(run, student_path)  # tokenizers only: before any model loads
    data = stages.domain_data(run)
    scorer = stages.make_scorer(run)
    teachers = load_teachers(run, local_device())

    evaluate = stages.heldout_eval if run.eval.in_run else stages.no_eval
    evals = {"start": evaluate(run, student_path, data, scorer)}
    kl = {"start": teacher_kl(run, student_path, teachers, data)}
    final_path, facts = distill_student(run, student_path, teachers, data, scorer, run_dir)
    evals["distilled"] = evaluate(run, final_path, data, scorer)
    kl["distilled"] = teacher_kl(run, final_path, teachers, data)

    d = run.distill
    facts_extra = {
        "distill": {
            "teachers": {name: d.teachers.get(name) for name in sorted(run.domains)},
            "teacher_device": d.teacher_device,
            "objective": d.objective,
            "heldout_kl": kl,
        }
    }
    total = time.perf_counter() - started
    summary = stages.summarise(run, run_dir, evals, facts, 0.0, total, facts_extra)
    stages.report(summary)
    return summary


def teacher_kl(run: RunConfig, model_path: str, teachers: dict, data: dict) -> dict[str, Any]:
    """Held-out per-token KL(student || own teacher) per domain (rank 0, local teachers)."""
    from rlvr.distillation.teachers import heldout_kl
    from rlvr.models.chat_format import ChatFormat
    from rlvr.models.loading import load_model, load_tokenizer
    from rlvr.runs.folders import barrier, is_main_process, local_device

    rows = [r for dd in data.values() for r in dd.heldout]
    local = all(getattr(t, "model", None) is not None for t in teachers.values())
    out: dict[str, Any] = {}
    if run.eval.in_run and rows and local and is_main_process():
        model = load_model(model_path, run.model).to(local_device())
        out = heldout_kl(
            model,
            {name: t.model for name, t in teachers.items()},
            load_tokenizer(model_path, run.model),
            rows,
            samples=run.eval.k,
            max_new_tokens=run.eval.max_new_tokens,
            temperature=run.distill.temperature,
            seed=run.eval.seed,
            batch_size=run.eval.batch_size,
            chat=ChatFormat.of(run.model),
        )
        del model
    barrier()
    return out


def distill_student(
    run: RunConfig, start_path: str, teachers: dict, data: dict, scorer, run_dir: Path
) -> tuple[str, dict[str, Any]]:
    """TRL's distillation loop from ``start_path`` with routed teachers; (final folder, facts)."""
    from datasets import Dataset

    from rlvr.distillation.trainer import RoutedDistillationTrainer, build_distill_config
    from rlvr.models.loading import load_tokenizer
    from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
    from rlvr.runs.folders import MetricsFileCallback
    from rlvr.training.checkpoints import resume_checkpoint, train_from
    from rlvr.training.stages import _peft_config, _sampler_factory, _save_final

    started = time.perf_counter()
    budget = ErrorBudget(run.trainer.max_infra_error_rate, run.trainer.infra_error_min_samples)
    timer = StepTimer()
    # Agent rows keep their text tool listing: the student answers in one turn (no environment).
    dataset = Dataset.from_list([r for dd in data.values() for r in dd.train])
    trainer_ref: dict[str, Any] = {}
    trainer = RoutedDistillationTrainer(
        model=start_path,
        args=build_distill_config(run, run_dir / "checkpoints"),
        train_dataset=dataset,
        processing_class=load_tokenizer(start_path, run.model),
        peft_config=_peft_config(run),
        callbacks=[MetricsFileCallback(run_dir / "metrics.jsonl", trainer_ref, timer)],
        teachers=teachers,
        objective=run.distill.objective,
        samples_per_prompt=run.distill.samples_per_prompt,
        sampler_factory=_sampler_factory(run, dataset),
        reward_funcs=build_reward_functions(
            sorted(run.domains), scorer, budget, timer, run.algo.format_gate
        ),
    )
    trainer_ref["trainer"] = trainer
    train_from(trainer, resume_checkpoint(run, run_dir))
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


def main() -> None:
    from rlvr.runs.cli import hydra_entry

    hydra_entry("distill", distill)


if __name__ == "__main__":
    main()
