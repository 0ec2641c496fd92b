"""Two ranks, one GRPO batch each, the model prepared by accelerate (DDP, or FSDP2 through
``tests.support.fsdp_on_cpu``): TRL's loss and gradient from its padded forward, then from our
lean forward with the ranks planning different chunk counts.

``accelerate launch ... -m tests.support.fsdp_on_cpu tests.support.lean_two_ranks MODEL OUT``
(or without ``fsdp_on_cpu`` for DDP). Rank 0 writes ``OUT/result.pt``; the test compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from rlvr.lean_forward.trimmed import CHUNK_OVERHEAD_TOKENS, plan_chunks
from tests.support.grpo_batches import grouped_batch, grpo_trainer
from tests.support.two_ranks import finish_rank, save_on_rank0, start_rank

PROMPT_WIDTH, COMPLETION_WIDTH, PROMPTS, GROUP = 24, 60, 4, 4


def rank_batch(rank: int) -> dict:
    """Rank 0: every row the same length (one chunk); rank 1: random lengths (several)."""
    ids, mask = grouped_batch(7 + rank, PROMPTS, GROUP, PROMPT_WIDTH, COMPLETION_WIDTH)
    if rank == 0:
        mask[:, :PROMPT_WIDTH] = 1
        mask[:, PROMPT_WIDTH:] = 0
        mask[:, PROMPT_WIDTH : PROMPT_WIDTH + 9] = 1
    rows = ids.size(0)
    return {
        "prompt_ids": ids[:, :PROMPT_WIDTH],
        "prompt_mask": mask[:, :PROMPT_WIDTH],
        "completion_ids": ids[:, PROMPT_WIDTH:],
        "completion_mask": mask[:, PROMPT_WIDTH:],
        "advantages": torch.linspace(-1, 1, rows, dtype=torch.float64) * (1 + rank),
        "num_items_in_batch": mask[:, PROMPT_WIDTH:].sum(),
    }


def main(model_dir: str, out: str) -> None:
    start_rank()
    rows = PROMPTS * GROUP
    trainer = grpo_trainer(model_dir, Path(out) / "trainer", rows, COMPLETION_WIDTH, True, False)
    accelerator = trainer.accelerator
    rank = accelerator.process_index
    lean = trainer._lean_forward
    assert accelerator.num_processes == 2 and lean is not None and not lean.share
    model = accelerator.prepare(trainer.model)
    trainer.model = trainer.model_wrapped = model
    model.train()
    calls = [0]
    model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    batch = rank_batch(rank)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    chunks = len(plan_chunks(mask, PROMPT_WIDTH, rows, CHUNK_OVERHEAD_TOKENS["cpu"]))
    result = {"chunks": chunks}
    for path in ("trl", "lean"):
        trainer._lean_forward = lean if path == "lean" else None
        calls[0] = 0
        model.zero_grad(set_to_none=True)
        loss = trainer._compute_loss(model, dict(batch))
        accelerator.backward(loss)
        grads = [p.grad for p in model.parameters()]
        grads = [g.full_tensor() if hasattr(g, "full_tensor") else g for g in grads]
        result[path] = {
            "loss": loss.detach().clone(),
            "forwards": calls[0],
            "grads": [g.detach().clone() for g in grads],
        }
    save_on_rank0(result, out)
    finish_rank()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
