"""Evaluation throughput: our batched generation vs a per-prompt ``model.generate`` loop.

python scripts/bench_eval.py --prompts 32 --k 8 1 --max-new-tokens 32 --batch-size 64 256

Same model (the embedded tiny model, or ``--model``: a trained one ends rows early), same
prompts (micro-suite math held-out), same decoding (temperature 1, top-p 1, no top-k, the
tokenizer's end token); prints samples/second, seconds and peak RSS of each, and the ratio per
k and batch size. ``--batch-size`` bounds the sequences
(prompts x samples) decoded together, as ``eval.batch_size`` does (64 by default). Each
measurement runs in its own process (so peak RSS is its own) and keeps the best of
``--repeats`` timed runs after a warm-up. Completions are not scored (scoring is identical).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rlvr.evaluation.generation import Decoding, generate
from rlvr.models.chat_format import ChatFormat, stop_token_ids
from rlvr.models.packaged import ensure_packaged_model, is_packaged
from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model
from tasks import micro

log = logging.getLogger("bench_eval")


def per_prompt_loop(model, tokenizer, prompts, decoding: Decoding) -> list[list[str]]:
    """The baseline: one ``generate`` call per prompt (k samples each), no padding."""
    out = []
    with torch.inference_mode():
        for text in ChatFormat().texts(tokenizer, prompts):
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
                eos_token_id=list(stop_token_ids(tokenizer, model.generation_config)),
            )
            new = tokens[:, enc["input_ids"].shape[1] :]
            out.append(tokenizer.batch_decode(new, skip_special_tokens=True))
    return out


def measure(job: dict) -> dict:
    """One path at one setting, in this process: best seconds of the repeats, peak RSS."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if job["threads"]:
        torch.set_num_threads(job["threads"])
    model = AutoModelForCausalLM.from_pretrained(job["folder"]).eval()
    tokenizer = AutoTokenizer.from_pretrained(job["folder"])
    prompts = [r["prompt"] for r in micro.generate("math", job["prompts"], seed=0, split="heldout")]
    decoding = Decoding(k=job["k"], temperature=1.0, top_p=1.0, max_new_tokens=job["new"])

    def run(batch: list) -> list[list[str]]:
        if job["path"] == "loop":
            return per_prompt_loop(model, tokenizer, batch, decoding)
        return generate(model, tokenizer, batch, decoding, job["batch_size"])

    run(prompts[:2])  # warm-up
    seconds = []
    for _ in range(job["repeats"]):
        start = time.perf_counter()
        run(prompts)
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    rss_mb = peak / 2**20 if sys.platform == "darwin" else peak / 1024
    params = sum(p.numel() for p in model.parameters())
    return {"seconds": min(seconds), "rss_mb": rss_mb, "threads": torch.get_num_threads(), "params": params}


def in_child(job: dict) -> dict:
    cmd = [sys.executable, __file__, "--job", json.dumps(job)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{job['path']} k={job['k']} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_k(base: dict, k: int, batch_sizes: list[int]) -> tuple[dict, dict[int, dict]]:
    """The loop and our generation at each batch size (sizes that batch alike run once)."""
    loop = in_child({**base, "path": "loop", "k": k})
    ours: dict[int, dict] = {}
    runs: dict[int, dict] = {}
    for b in batch_sizes:
        per_batch = min(max(1, b // k), base["prompts"])  # prompts per batch, as generate splits
        if per_batch not in runs:
            runs[per_batch] = in_child({**base, "path": "ours", "k": k, "batch_size": b})
        ours[b] = runs[per_batch]
    return loop, ours


def report(k: int, samples: int, loop: dict, ours: dict[int, dict]) -> None:
    row = "  %-34s %8.1f samples/s  %6.2f s  peak RSS %6.0f MB"
    log.info("k=%d (%d samples)", k, samples)
    for batch, r in ours.items():
        name = f"batched, batch {batch} (generation)"
        log.info(row, name, samples / r["seconds"], r["seconds"], r["rss_mb"])
    log.info(row, "per-prompt generate loop", samples / loop["seconds"], loop["seconds"], loop["rss_mb"])
    for batch, r in ours.items():
        log.info("  ratio batched / loop, k=%d, batch %-4d %6.2fx", k, batch, loop["seconds"] / r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--k", type=int, nargs="+", default=[8, 1])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=2, help="timed runs; the best is kept")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    parser.add_argument("--cache-dir", default=None, help="tiny model cache (default: a temp dir)")
    parser.add_argument(
        "--model",
        default=None,
        help="a model folder or a packaged model (smollm2-135m-instruct) instead of the tiny model",
    )
    parser.add_argument("--job", help=argparse.SUPPRESS)  # internal: one measurement
    args = parser.parse_args()
    if args.job:
        print(json.dumps(measure(json.loads(args.job))))
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    cache = args.cache_dir or tempfile.mkdtemp()
    if args.model and is_packaged(args.model):
        folder = ensure_packaged_model(args.model, Path(cache) / "models")
    else:
        folder = args.model or ensure_tiny_model(cache, TinyModelSpec())
    base = {
        "folder": str(folder),
        "prompts": args.prompts,
        "new": args.max_new_tokens,
        "repeats": args.repeats,
        "threads": args.threads,
    }
    results = {k: measure_k(base, k, args.batch_size) for k in args.k}
    first = next(iter(results.values()))[0]
    log.info(
        "model %s (%s params), %d prompts, %d new tokens max, %d torch thread(s), best of %d",
        args.model or "tiny",
        f"{first['params']:,}",
        args.prompts,
        args.max_new_tokens,
        first["threads"],
        args.repeats,
    )
    for k, (loop, ours) in results.items():
        report(k, args.prompts * k, loop, ours)
    log.info("bench took %.0f s", time.perf_counter() - start)


if __name__ == "__main__":
    main()
