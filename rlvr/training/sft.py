"""SFT building block: the demonstration dataset and one TRL ``SFTTrainer`` fine-tune."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.models.chat_format import turn_end_token_id
from rlvr.models.generation_marks import marked_template

log = logging.getLogger(__name__)


def sft_dataset(run: RunConfig):
    """Chat examples: micro-suite demonstrations (prompt/completion) or Hub chat datasets
    (``messages``, e.g. allenai/tulu-3-sft-mixture)."""
    from datasets import Dataset, concatenate_datasets, load_dataset

    from rlvr.data.rows import sft_examples

    if run.sft.datasets:
        parts = [load_dataset(name, split="train") for name in run.sft.datasets]
        data = concatenate_datasets(parts).shuffle(seed=run.trainer.seed)
    else:
        examples = sft_examples(run, seed=run.trainer.seed + 1000)
        data = Dataset.from_list(examples).shuffle(seed=run.trainer.seed)
    return with_template_options(data, dict(run.model.chat_template_kwargs))


def with_template_options(data, template_kwargs: dict):
    """Every example renders with the model's chat template options, as GRPO and evaluation
    do (TRL's SFT reads them per example from a ``chat_template_kwargs`` column)."""
    if not template_kwargs:
        return data
    return data.map(lambda _: {"chat_template_kwargs": template_kwargs})


def loss_options(data) -> dict:
    """TRL's loss mask for the data's shape: the assistant turns of ``messages`` chats, the
    completion of prompt/completion examples (TRL applies each only to its own shape)."""
    columns = set(data.column_names)
    if "messages" in columns:
        return {"assistant_only_loss": True, "completion_only_loss": False}
    if {"prompt", "completion"} <= columns:
        return {"completion_only_loss": True}
    raise ConfigError(
        f"SFT data has columns {sorted(columns)}: give sft.datasets chat data with a "
        "'messages' column, or prompt/completion data with 'prompt' and 'completion' columns"
    )


def turn_end_stop(tokenizer) -> str | None:
    """The token ending the template's assistant turns, where it is not the tokenizer's end
    token (None: they agree, or the template names none)."""
    turn_end = turn_end_token_id(tokenizer)
    if turn_end is None or turn_end == tokenizer.eos_token_id:
        return None
    return tokenizer.convert_ids_to_tokens(turn_end)


def _scheduler_kwargs(run: RunConfig) -> dict | None:
    """The cosine schedule's floor (``cosine_with_min_lr``); None for the other schedules."""
    floor = run.sft.min_learning_rate
    return {"min_lr": floor} if floor is not None else None


def run_sft(run: RunConfig, model_path: str, out_dir: Path, tracker: Any = None) -> tuple[Path, float]:
    """Fine-tune on demonstrations; returns (folder, seconds). The loss covers what the model
    generates: the completion of prompt/completion examples, the assistant turns (their end
    token included) of ``messages`` conversations, through the model's own chat template
    marked for it (``rlvr.models.generation_marks``). Where the template ends assistant turns
    with a token other than the tokenizer's end token, the saved model stops there.

    Checkpoints go to ``<out_dir>/checkpoints``; with ``resume=true`` (or a SLURM requeue)
    the newest complete one is continued from. ``tracker``: the stage's W&B run
    (``rlvr.tracking``), for SFT as a stage of its own."""
    from trl import SFTConfig

    from rlvr.models.loading import load_tokenizer, model_init_kwargs
    from rlvr.rewards.bridge import StepTimer
    from rlvr.runs.folders import (
        MetricsFileCallback,
        barrier,
        gradient_checkpointing,
        is_main_process,
        use_cpu,
    )
    from rlvr.training.checkpoints import resume_checkpoint, train_from
    from rlvr.training.lean_sft import LeanSFTTrainer
    from rlvr.training.saving import save_full_model
    from rlvr.training.trainer_args import ddp_timeout, micro_batches, report_to

    final = out_dir / "final"
    if (final / "config.json").exists():
        log.info("SFT model already present at %s; reusing it", final)
        return final, 0.0
    start = time.perf_counter()
    tokenizer = load_tokenizer(model_path, run.model)
    tokenizer.padding_side = "right"
    data = sft_dataset(run)
    template = tokenizer.chat_template
    if "messages" in data.column_names:  # TRL masks by the template's generation marks
        tokenizer.chat_template = marked_template(tokenizer, run.model.chat_template_kwargs)
    s = run.sft
    micro, accumulation = micro_batches(run, "sft")
    args = SFTConfig(
        output_dir=str(out_dir / "checkpoints"),
        run_name=f"{run.experiment}/{run.run_name}/sft",
        report_to=report_to(run),
        seed=run.trainer.seed,
        max_steps=s.max_steps,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=accumulation,
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.lr_scheduler_type,
        lr_scheduler_kwargs=_scheduler_kwargs(run),
        warmup_steps=s.warmup_ratio or s.warmup_steps,  # below 1: transformers' share of steps
        adam_beta1=s.adam_beta1,
        adam_beta2=s.adam_beta2,
        weight_decay=s.weight_decay,
        max_length=s.max_length,
        **loss_options(data),
        eos_token=turn_end_stop(tokenizer),  # saved into the tokenizer and generation config
        logging_steps=max(s.max_steps // 20, 1),
        save_strategy="steps" if s.save_steps > 0 else "no",
        save_steps=max(s.save_steps, 1),
        save_total_limit=s.save_total_limit,
        save_only_model=False,  # optimizer and RNG state: the resumed run continues exactly
        bf16=run.trainer.bf16,
        gradient_checkpointing=gradient_checkpointing(run.trainer.gradient_checkpointing),
        use_cpu=use_cpu(run.trainer.use_cpu),
        model_init_kwargs=model_init_kwargs(run.model),
        dataloader_num_workers=0,
        ddp_timeout=ddp_timeout(run, "sft"),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = MetricsFileCallback(out_dir / "metrics.jsonl", {}, StepTimer(), tracker)
    trainer = LeanSFTTrainer(
        trim_padding=s.trim_padding,
        model=model_path,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        callbacks=[progress],
    )
    tokenizer.chat_template = template  # tokenized: saved folders keep the model's own text
    train_from(trainer, resume_checkpoint(run, out_dir), run.trainer.save_every_min)
    save_full_model(trainer, final, lora=False, dtype=run.trainer.save_dtype)
    if is_main_process():
        tokenizer.padding_side = "left"
        tokenizer.save_pretrained(str(final))
    barrier()
    return final, time.perf_counter() - start
