"""Padded GRPO batches as TRL builds them, and our GRPO trainer over the tiny model, for the
lean-forward tests (one process, and two ranks: ``tests/support/lean_two_ranks.py``)."""

from __future__ import annotations

import os
import random

import torch

from rlvr.models import tiny as tiny_model


def padded_batch(seed: int, rows: int, prompt_width: int, completion_width: int):
    """Left-padded prompts and right-padded completions of random lengths, as TRL builds them
    (a few rows with an empty completion)."""
    rng = random.Random(seed)
    ids = torch.zeros(rows, prompt_width + completion_width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r in range(rows):
        p = rng.randint(1, prompt_width)
        c = 0 if rng.random() < 0.1 else rng.randint(1, completion_width)
        span = slice(prompt_width - p, prompt_width + c)
        mask[r, span] = 1
        ids[r, span] = torch.tensor([rng.randint(5, 60) for _ in range(p + c)])
    return ids, mask


def grouped_batch(seed: int, prompts: int, group: int, prompt_width: int, completion_width: int):
    """``padded_batch`` with every prompt repeated for ``group`` completions, as GRPO samples."""
    ids, mask = padded_batch(seed, prompts * group, prompt_width, completion_width)
    first = torch.arange(prompts).repeat_interleave(group) * group
    ids[:, :prompt_width] = ids[first, :prompt_width]
    mask[:, :prompt_width] = mask[first, :prompt_width]
    mask[:, prompt_width - 1] = 1  # every prompt at least one token long, as in TRL
    ids[:, prompt_width - 1] = ids[first, prompt_width - 1].clamp(min=5)
    return ids, mask


def grpo_trainer(model_dir, out, rows: int, completion_width: int, trim: bool, share: bool, skip=True, **config):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from rlvr.training.grpo import RLVRGRPOTrainer

    trainer = RLVRGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir).double(),
        processing_class=tiny_model.build_tokenizer(),
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=GRPOConfig(
            output_dir=str(out),
            per_device_train_batch_size=rows,
            num_generations=4,
            max_completion_length=completion_width,
            beta=config.pop("beta", 0.0),
            report_to=[],
            use_cpu=True,
            bf16=False,  # float64 throughout, also under FSDP2 (no upcast, no autocast)
            save_strategy="no",
            seed=0,
            **config,
        ),
        train_dataset=Dataset.from_list([{"prompt": "Compute 1+2."}] * rows),
        trim_padding=trim,
        share_prompts=share,
        skip_zero_advantage=skip,
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop
    return trainer
