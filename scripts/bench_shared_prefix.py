"""Decoding from shared prompts against a copy of each prompt's cache per sample, per domain.

    python scripts/bench_shared_prefix.py --model outputs/tiny_study/sft/final

The same prompts (each domain's held-out set, rendered with the model's chat template), the
same generator seed and budget, 32 prompts x k = 8 in one batch as a GRPO step samples them:
``sample_tokens`` with ``share_prompts=False`` (the baseline: every sample's row holds a copy
of its prompt's keys and values) and with the default (``rlvr.evaluation.shared_prefix``).
Agent rows run as tool episodes (``run_episodes``, 32 prompts x 8 episodes in one batch, a
192-id budget, as the GRPO tool loop runs them) with ``share_prompts`` off and on.
Prints seconds of each (best of the repeats, one thread), their ratio, the mean prompt and
completion length, and how many of the completions came out identical (the two paths differ
in float rounding only, so a draw can flip where a uniform number falls on a boundary).
Without ``--model`` the embedded tiny model is built untrained (its rows run to the budget).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time

import torch

from rlvr.evaluation.generation import Decoding, prompt_ids, sampler_for
from rlvr.evaluation.sampling import sample_tokens
from rlvr.models.chat_format import ChatFormat
from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model
from tasks import micro

log = logging.getLogger("bench_shared_prefix")
BUDGETS = {"math": 64, "code": 96, "science": 64, "instruction": 64}  # the study's
# experiment=tiny_study's levels (mixture.difficulty): agent level 1 prompts are ~150 ids
LEVELS = {"math": [3], "code": [3, 5], "science": [2], "instruction": [3], "agent": [1]}


def timed(run, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a model folder (default: the tiny model)")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = args.model or str(ensure_tiny_model(tempfile.mkdtemp(), TinyModelSpec()))
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    totals = [0.0, 0.0]
    for domain, budget in BUDGETS.items():
        rows = micro.generate(domain, args.prompts, 0, LEVELS[domain], split="heldout")
        ids = prompt_ids(tokenizer, [r["prompt"] for r in rows], ChatFormat())
        decoding = Decoding(k=args.k, temperature=1.0, top_p=1.0, max_new_tokens=budget)
        sampler = sampler_for(tokenizer, model, decoding)

        def run(share: bool, ids=ids, sampler=sampler):
            generator = torch.Generator().manual_seed(0)
            return sample_tokens(model, ids, sampler, args.k, generator, share_prompts=share)

        run(True)  # warm-up
        base_s, base = timed(lambda: run(False), args.repeats)
        ours_s, ours = timed(lambda: run(True), args.repeats)
        totals[0] += base_s
        totals[1] += ours_s
        pairs = [(a, b) for pa, pb in zip(base.ids, ours.ids, strict=True) for a, b in zip(pa, pb, strict=True)]
        same = sum(a == b for a, b in pairs)
        length = sum(len(a) for a, _ in pairs) / len(pairs)
        prompt = sum(map(len, ids)) / len(ids)
        log.info(
            "%-12s prompt %4.0f ids, completion %5.1f ids: k-fold cache %6.2f s, shared "
            "%6.2f s, ratio %5.2fx, identical %d/%d",
            domain,
            prompt,
            length,
            base_s,
            ours_s,
            base_s / ours_s,
            same,
            len(pairs),
        )
    log.info(
        "single turn  k-fold cache %6.2f s, shared %6.2f s, ratio %5.2fx", totals[0], totals[1], totals[0] / totals[1]
    )
    episodes(model, tokenizer, args)


def episodes(model, tokenizer, args) -> None:
    """The agent held-out rows as tool episodes, each prompt's cache per episode or shared."""
    from rlvr.evaluation.episodes import run_episodes

    rows = micro.generate("agent", args.prompts, 0, LEVELS["agent"], split="heldout")
    decoding = Decoding(k=args.k, temperature=1.0, top_p=1.0, max_new_tokens=192)

    def run(share: bool):
        return run_episodes(model, tokenizer, rows, decoding, batch_size=args.prompts * args.k, share_prompts=share)

    run(True)  # warm-up
    base_s, base = timed(lambda: run(False), args.repeats)
    ours_s, ours = timed(lambda: run(True), args.repeats)
    pairs = [(a.text, b.text) for pa, pb in zip(base, ours, strict=True) for a, b in zip(pa, pb, strict=True)]
    same = sum(a == b for a, b in pairs)
    length = sum(r.tokens for p in base for r in p) / len(pairs)
    log.info(
        "agent        episodes of %5.1f ids: copy per episode %6.2f s, shared %6.2f s, ratio %5.2fx, identical %d/%d",
        length,
        base_s,
        ours_s,
        base_s / ours_s,
        same,
        len(pairs),
    )


if __name__ == "__main__":
    main()
