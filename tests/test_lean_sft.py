"""SFT's loss over length-sorted chunks (``rlvr.lean_forward.sft``) is TRL's padded batch's:
the same loss, gradient, entropy and token accuracy (a float64 model, up to rounding that
differs with the chunks' shapes)."""

from __future__ import annotations

import os

import torch

from rlvr.models import tiny as tiny_model
from tasks import micro


def sft_trainer(model_dir, out, trim: bool, examples):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig

    from rlvr.training.lean_sft import LeanSFTTrainer

    tokenizer = tiny_model.build_tokenizer()
    tokenizer.padding_side = "right"
    trainer = LeanSFTTrainer(
        trim_padding=trim,
        model=AutoModelForCausalLM.from_pretrained(model_dir).double(),
        processing_class=tokenizer,
        train_dataset=Dataset.from_list(examples),
        args=SFTConfig(
            output_dir=str(out),
            per_device_train_batch_size=len(examples),
            max_length=400,
            completion_only_loss=True,
            report_to=[],
            use_cpu=True,
            bf16=False,
            save_strategy="no",
            seed=0,
        ),
    )
    trainer.model.train()
    return trainer


def test_chunked_sft_loss_is_the_padded_batchs(tiny_model_dir, tmp_path):
    rows = micro.generate("math", 6, seed=1, split="train")
    examples = []
    for i, row in enumerate(rows):  # answers of very different lengths: much right padding
        answer = "Answer: " + str(i) * (1 + 150 * (i % 3))
        examples.append({"prompt": row["prompt"], "completion": [{"role": "assistant", "content": answer}]})
    results = {}
    for trim in (False, True):
        trainer = sft_trainer(tiny_model_dir, tmp_path / str(trim), trim, examples)
        batch = next(iter(trainer.get_train_dataloader()))
        items = (batch["labels"] != -100).sum()
        trainer.model.zero_grad(set_to_none=True)
        loss = trainer.compute_loss(trainer.model, dict(batch), num_items_in_batch=items)
        loss.backward()
        grads = [p.grad.clone() for p in trainer.model.parameters() if p.grad is not None]
        metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
        results[trim] = (
            loss.detach(),
            grads,
            metrics,
            trainer.chunks_run,
        )
    (loss, grads, metrics, chunks), (full, full_grads, full_metrics, none) = (
        results[True],
        results[False],
    )
    assert none == 0 and chunks >= 2, chunks  # the batch was cut; TRL's path cut nothing
    torch.testing.assert_close(loss, full, atol=1e-8, rtol=1e-6)
    assert len(grads) == len(full_grads) and any(g.norm() > 0 for g in full_grads)
    for a, b in zip(grads, full_grads, strict=True):
        assert (a - b).norm() <= 1e-5 * b.norm()
    assert metrics.keys() == full_metrics.keys()
    for key in ("entropy", "mean_token_accuracy", "num_tokens"):
        assert abs(metrics[key] - full_metrics[key]) <= 1e-6 * max(1.0, abs(full_metrics[key])), key
