"""Two ranks sample from one model prepared by accelerate (FSDP2 through
``tests.support.fsdp_on_cpu``, or DDP), each its own prompts and budgets, through
``rlvr.rollouts.lockstep``: single turns, then tool-style episodes. Each rank also samples the
same rows from an unsharded copy of the weights with the same seed; rank 0 writes both, with
each rank's forward and stand-in counts, to ``OUT/result.pt``.

``accelerate launch ... -m tests.support.fsdp_on_cpu tests.support.sampling_two_ranks MODEL OUT``
"""

from __future__ import annotations

import copy
import sys

import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

from rlvr.evaluation.multiturn import TurnSampling, sample_episodes
from rlvr.evaluation.sampling import Sampler
from rlvr.rollouts.lockstep import in_step
from rlvr.rollouts.single_turn import sample_rows
from tests.support.two_ranks import finish_rank, save_on_rank0, start_rank

# rank 0: few short rows; rank 1: more rows, a longer budget (it runs more forwards)
PROMPTS = {0: [[5, 6, 7], [9, 10]], 1: [[11, 12, 13, 14], [15], [16, 17]]}
BUDGET = {0: 4, 1: 24}
SUFFIX = [20, 21, 22]  # what a tool answers; each episode gets one answer, then ends


def single_turns(model, rank: int) -> list[list[int]]:
    sampler = Sampler(max_new_tokens=BUDGET[rank], eos_token_ids=(1,), pad_token_id=0)
    prompts = [p for p in PROMPTS[rank] for _ in range(2)]  # two samples a prompt
    generator = torch.Generator().manual_seed(100 + rank)
    return sample_rows(model, prompts, sampler, generator)[0]


def episodes(model, rank: int) -> list[list[int]]:
    budget = BUDGET[rank] + 8
    answered: set[int] = set()

    def on_turns(turns):  # the first turn, if it fits, gets an answer; the second ends it
        out = []
        for i, turn in turns:
            fits = i not in answered and len(turn) + len(SUFFIX) < budget
            out.append(SUFFIX if fits else None)
            answered.add(i)
        return out

    sampling = TurnSampling(budget=budget, eos_token_ids=tuple(range(1, 40)), pad_token_id=0, batch_size=2)
    generator = torch.Generator().manual_seed(200 + rank)
    traces = sample_episodes(model, PROMPTS[rank], on_turns, sampling, generator)
    return [t.completion_ids for t in traces]


def main(model_dir: str, out: str) -> None:
    start_rank()
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    whole = copy.deepcopy(model).eval()
    model = accelerator.prepare(model).eval()
    result = {"distributed_type": str(accelerator.distributed_type)}
    for name, draw in (("single_turns", single_turns), ("episodes", episodes)):
        with torch.no_grad(), in_step(model, accelerator) as stepped:
            drawn = draw(stepped, rank)
        result[name] = {
            "drawn": drawn,
            "whole": draw(whole, rank),
            "forwards": stepped.forwards,
            "stand_ins": stepped.stand_ins,
        }
    save_on_rank0(result, out)
    finish_rank()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
