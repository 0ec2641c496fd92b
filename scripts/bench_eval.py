"""Evaluation throughput: our batched generation vs a per-prompt ``model.generate`` loop.

python scripts/bench_eval.py --prompts 32 --k 8 --max-new-tokens 32

Same model (the embedded tiny model), same prompts (micro-suite math held-out), same decoding;
prints samples/second of each and the ratio. Completions are not scored (scoring is identical).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time

import torch

from rlvr.evaluation.generation import Decoding, generate, render_prompts
from rlvr.tiny_model import TinyModelSpec, ensure_tiny_model
from tasks import micro

log = logging.getLogger("bench_eval")


def per_prompt_loop(model, tokenizer, prompts, decoding: Decoding) -> list[list[str]]:
    """The baseline: one ``generate`` call per prompt (k samples each), no padding."""
    out = []
    with torch.inference_mode():
        for text in render_prompts(tokenizer, prompts):
            enc = tokenizer(text, return_tensors="pt", add_special_tokens=False)
            tokens = model.generate(
                **enc,
                do_sample=True,
                temperature=decoding.temperature,
                top_p=decoding.top_p,
                top_k=0,
                num_return_sequences=decoding.k,
                max_new_tokens=decoding.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
            new = tokens[:, enc["input_ids"].shape[1] :]
            out.append(tokenizer.batch_decode(new, skip_special_tokens=True))
    return out


def timed(fn, *args) -> tuple[float, list[list[str]]]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    parser.add_argument("--cache-dir", default=None, help="tiny model cache (default: a temp dir)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = ensure_tiny_model(args.cache_dir or tempfile.mkdtemp(), TinyModelSpec())
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    prompts = [r["prompt"] for r in micro.generate("math", args.prompts, seed=0, split="heldout")]
    decoding = Decoding(k=args.k, temperature=1.0, top_p=1.0, max_new_tokens=args.max_new_tokens)
    samples = len(prompts) * args.k
    generate(model, tokenizer, prompts[:2], decoding, args.batch_size)  # warm-up, both paths
    per_prompt_loop(model, tokenizer, prompts[:2], decoding)
    ours_s, _ = timed(generate, model, tokenizer, prompts, decoding, args.batch_size)
    loop_s, _ = timed(per_prompt_loop, model, tokenizer, prompts, decoding)
    log.info(
        "model tiny (%s params), %d prompts x k=%d, %d new tokens max, %d torch thread(s)",
        f"{sum(p.numel() for p in model.parameters()):,}", len(prompts), args.k,
        args.max_new_tokens, torch.get_num_threads(),
    )  # fmt: skip
    log.info(
        "batched (rlvr.evaluation.generation): %7.1f samples/s (%.2f s)", samples / ours_s, ours_s
    )
    log.info("per-prompt generate loop : %7.1f samples/s (%.2f s)", samples / loop_s, loop_s)
    log.info("ratio batched / loop     : %7.2fx", loop_s / ours_s)


if __name__ == "__main__":
    main()
