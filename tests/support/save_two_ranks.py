"""Two FSDP2 ranks train a tiny model one bf16 step and save it (tests/test_save_dtype.py).

``accelerate launch ... -m tests.support.fsdp_on_cpu tests.support.save_two_ranks <out>
<model folder> <trainer.save_dtype>``: FSDP with mixed precision keeps float32 master weights;
the final folder is gathered by ``save_full_model`` and its dtype reported per rank.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

from rlvr.training.saving import save_full_model
from tests.support.two_ranks import finish_rank, save_on_rank0, start_rank


def main() -> None:
    start_rank()
    out, model_dir, setting = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    ids = AutoTokenizer.from_pretrained(model_dir)("Answer: 7\n").input_ids
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"),
        use_cpu=True,
        bf16=True,
        max_steps=1,
        per_device_train_batch_size=2,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
    )
    rows = [{"input_ids": ids, "labels": ids} for _ in range(4)]
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    trainer.train()
    master = {str(p.dtype) for p in trainer.model_wrapped.parameters()}
    save_full_model(trainer, out / "final", lora=False, dtype=setting)
    save_on_rank0({"fsdp": trainer.is_fsdp_enabled, "master": sorted(master)}, out)
    finish_rank()


if __name__ == "__main__":
    main()
