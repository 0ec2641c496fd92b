"""Tool episodes: the KV-cached batched loop vs the re-encoding loop it replaced, same settings.

python scripts/bench_episodes.py --rows 16 --k 8 --budget 192 [--model PATH] [--grpo-steps 4]

Both paths run the same agent micro-suite held-out rows (``workplace_lite``) on the same model
with the same decoding, each in a fresh process (so peak RSS is its own), after a warm-up.
The baseline is the loop ``run_episodes`` had before: per turn, the whole conversation is
left-padded and re-encoded and ``model.generate`` called again, every episode of a batch
decoding until the longest turn ends. Prints episodes/s, ms per episode, the ratio, peak RSS,
and how many greedy episodes came out token for token the same on both paths.

Without ``--model`` the tiny model is first taught the tool-call format by a short agent SFT
(about three minutes on 2 cores, once: cached under ``$RLVR_CACHE/bench-episodes``), so episodes
call tools and get answers; an untrained model would only ever produce one turn.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

log = logging.getLogger("bench_episodes")
REPO = Path(__file__).resolve().parents[1]


def legacy_run_episodes(model, tokenizer, rows, decoding, *, batch_size=64, seed=0):
    """The re-encoding loop (``run_episodes`` before the KV-cached one), kept for comparison."""
    import torch

    from rlvr.evaluation.episodes import _advance, episode_tokenizer, score_episodes

    tokenizer = episode_tokenizer(tokenizer)
    per_row = 1 if decoding.greedy else decoding.k
    episodes = [_legacy_start(tokenizer, dict(r)) for r in rows for _ in range(per_row)]
    limit = getattr(model.config, "max_position_embeddings", 1 << 30)
    budget = decoding.max_new_tokens
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    while active := [e for e in episodes if not e.finished]:
        active.sort(key=lambda e: len(e.ids))  # similar lengths share a batch
        for start in range(0, len(active), batch_size):
            chunk = active[start : start + batch_size]
            for episode, turn in zip(chunk, _legacy_turns(model, tokenizer, chunk, decoding, budget), strict=True):
                _advance(tokenizer, episode, turn, budget, limit)
                if len(episode.completion_ids) >= budget:
                    episode.finished = True
    model.train(was_training)
    return score_episodes(episodes, per_row, False)


def _legacy_start(tokenizer, row):
    """An episode as the re-encoding loop started one: rendered per sample, with the tools as
    bound methods (converted to JSON schemas again at every render and parse)."""
    from rlvr.data.agent import training_row
    from rlvr.evaluation.episodes import Episode
    from tasks.environments import get_environment_class, tool_names

    environment = get_environment_class(row["environment"])()
    observation = environment.reset(**{k: v for k, v in row.items() if k != "environment"})
    prompt = [dict(m) for m in training_row(row)["prompt"]]
    if isinstance(observation, str):
        prompt[-1] = {**prompt[-1], "content": prompt[-1]["content"] + observation}
    tools = [getattr(environment, name) for name in tool_names(type(environment))]
    prompt_ids = tokenizer.apply_chat_template(
        prompt, tools=tools or None, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    return Episode(environment, tools, list(prompt_ids))


def _legacy_turns(model, tokenizer, episodes, decoding, budget) -> list[list[int]]:
    """One more turn for each episode (left-padded batch, the whole conversation re-encoded)."""
    import torch

    width = max(len(e.ids) for e in episodes)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(e.ids)) + e.ids for e in episodes])
    mask = torch.tensor([[0] * (width - len(e.ids)) + [1] * len(e.ids) for e in episodes])
    kwargs: dict[str, Any] = {
        "max_new_tokens": max(budget - len(e.completion_ids) for e in episodes),
        "pad_token_id": pad,
        "eos_token_id": tokenizer.eos_token_id,
    }
    if decoding.greedy:
        kwargs["do_sample"] = False
    else:
        kwargs.update(do_sample=True, temperature=decoding.temperature, top_p=decoding.top_p, top_k=0)
    with torch.inference_mode():
        out = model.generate(input_ids=input_ids, attention_mask=mask, **kwargs)
    turns = []
    for e, row in zip(episodes, out[:, width:].tolist(), strict=True):
        row = row[: budget - len(e.completion_ids)]
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id) + 1]
        turns.append(row)
    return turns


def agent_model(cache: Path, steps: int = 160) -> Path:
    """A tiny model after a short agent SFT: it calls tools, so episodes have several turns.
    The benchmark's figures are for 160 steps; the tests ask for fewer (tests/conftest.py)."""
    out = cache / ("bench-episodes" if steps == 160 else f"bench-episodes-{steps}-steps")
    final = out / "sft" / "final"
    if not (final / "config.json").exists():
        log.info("building the agent SFT model once (%d steps, ~1.5 s each) in %s", steps, out)
        overrides = [
            "experiment=tiny_sft",
            "domains=[agent]",
            f"sft.max_steps={steps}",
            "eval.in_run=false",
            "logger=none",
            f"paths.output_root={out}",
            f"hydra.run.dir={out / 'sft'}",
        ]
        env = dict(os.environ, RLVR_CACHE=str(cache))
        subprocess.run([sys.executable, "-m", "rlvr.sft", *overrides], cwd=REPO, env=env, check=True)
    return final


def run_path(path: str, model_dir: str, args: dict[str, Any]) -> dict[str, Any]:
    """One path in this (fresh) process: warm-up, the timed run, then greedy episodes."""
    import torch

    torch.set_num_threads(args["threads"])
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr.evaluation.episodes import run_episodes
    from rlvr.evaluation.generation import Decoding
    from tasks import micro

    run = run_episodes if path == "kv-cached" else legacy_run_episodes
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = micro.generate("agent", args["rows"], seed=0, difficulty=1, split="heldout")
    sampled = Decoding(k=args["k"], max_new_tokens=args["budget"])
    greedy = Decoding(greedy=True, max_new_tokens=args["budget"])
    run(model, tokenizer, rows[:2], sampled, batch_size=args["batch_size"])  # warm-up
    start = time.perf_counter()
    results = run(model, tokenizer, rows, sampled, batch_size=args["batch_size"], seed=1)
    seconds = time.perf_counter() - start
    episodes = [e for r in results for e in r]
    texts = [r[0].text for r in run(model, tokenizer, rows, greedy, batch_size=args["batch_size"])]
    single = single_turn_rate(model, tokenizer, rows, args) if path == "kv-cached" else None
    return {
        "single_turn_tokens_per_s": single,
        "seconds": seconds,
        "episodes": len(episodes),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "tokens": sum(e.tokens for e in episodes) / len(episodes),
        "turns": sum(e.text.count("<tool_call>") for e in episodes) / len(episodes),
        "score": sum(e.verdict.score for e in episodes) / len(episodes),
        "greedy_texts": texts,
    }


def single_turn_rate(model, tokenizer, rows, args: dict[str, Any]) -> float:
    """Tokens per second of plain single-turn sampling from the episodes' first prompts (same
    k, budget and batch): the speed an episode would run at if its turns cost nothing extra."""
    import torch

    from rlvr.evaluation.episodes import episode_tokenizer, start_episode
    from rlvr.evaluation.sampling import Sampler, sample_tokens

    tokenizer = episode_tokenizer(tokenizer)
    prompts = [start_episode(tokenizer, dict(row)).prompt_ids for row in rows]
    sampler = Sampler(args["budget"], (tokenizer.eos_token_id,), tokenizer.pad_token_id)
    per_batch = max(1, args["batch_size"] // args["k"])
    generator = torch.Generator().manual_seed(1)
    start, tokens = time.perf_counter(), 0
    for i in range(0, len(prompts), per_batch):
        drawn = sample_tokens(model, prompts[i : i + per_batch], sampler, args["k"], generator)
        tokens += sum(len(ids) for per_prompt in drawn.ids for ids in per_prompt)
    return tokens / (time.perf_counter() - start)


ALL_ROWS = ["trainer.skip_zero_advantage=false"]
TRL_FORWARD = ["trainer.trim_padding=false", "trainer.share_prompts=false", *ALL_ROWS]
GRPO_ARMS = {
    "agent, episodes": ["experiment=tiny_rl_agent"],
    "agent, all rows": ["experiment=tiny_rl_agent", *ALL_ROWS],
    "agent, TRL forward": ["experiment=tiny_rl_agent", *TRL_FORWARD],
    "agent, TRL loop": ["experiment=tiny_rl_agent", "trainer.tool_episodes=false", *TRL_FORWARD],
    "math": ["experiment=tiny_rl_math"],
    "math, all rows": ["experiment=tiny_rl_math", *ALL_ROWS],
    "math, TRL forward": ["experiment=tiny_rl_math", *TRL_FORWARD],
}


def grpo_steps(model_dir: str, steps: int, out: Path) -> dict[str, dict[str, float]]:
    """Mean step, generation and update seconds of each GRPO arm (tiny_rl settings: 8 prompts
    x 16 completions, 192 tokens), every step after the first, each arm its own process."""
    import json

    measured = {}
    for name, overrides in GRPO_ARMS.items():
        run_dir = out / name.replace(", ", "-").replace(" ", "_")
        common = [
            f"init_from={model_dir}",
            f"trainer.max_steps={steps}",
            "trainer.save_steps=0",
            "eval.in_run=false",
            "logger=none",
            f"paths.output_root={out}",
            f"hydra.run.dir={run_dir}",
        ]
        subprocess.run(
            [sys.executable, "-m", "rlvr.train", *overrides, *common],
            cwd=REPO,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        timed = [r for r in rows if "time/step_s" in r][1:] or [r for r in rows if "time/step_s" in r]
        measured[name] = {
            key: sum(r[f"time/{key}"] for r in timed) / len(timed) for key in ("step_s", "generation_s", "update_s")
        }
        lengths = [r["completions/mean_length"] for r in rows if "completions/mean_length" in r]
        measured[name]["length"] = sum(lengths) / max(1, len(lengths))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--budget", type=int, default=192, help="tokens per episode")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--model", default=None, help="model folder (default: agent SFT)")
    parser.add_argument(
        "--grpo-steps",
        type=int,
        default=0,
        help="also time GRPO steps of an agent arm (episodes, TRL's loop) and a math arm from "
        "--model (give it the shared tiny_sft model), each also with TRL's padded log-prob "
        "forward; several minutes",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cache = Path(os.environ.get("RLVR_CACHE", "~/.cache/rlvr")).expanduser()
    model_dir = args.model or str(agent_model(cache))
    settings = {
        "rows": args.rows,
        "k": args.k,
        "budget": args.budget,
        "batch_size": args.batch_size,
        "threads": args.threads,
    }
    measured = {}
    for path in ("kv-cached", "re-encoding"):
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            measured[path] = pool.submit(run_path, path, model_dir, settings).result()
    new, old = measured["kv-cached"], measured["re-encoding"]
    log.info(
        "%d rows x k=%d = %d episodes, budget %d tokens, batch %d, %d torch thread(s), model %s",
        args.rows,
        args.k,
        new["episodes"],
        args.budget,
        args.batch_size,
        args.threads,
        model_dir,
    )
    for name, m in measured.items():
        log.info(
            "%-12s %6.1f episodes/s  %6.1f ms/episode  (%.2f s)  peak RSS %5.0f MB  "
            "mean %.0f tokens, %.2f tool calls, score %.3f",
            name,
            m["episodes"] / m["seconds"],
            1000 * m["seconds"] / m["episodes"],
            m["seconds"],
            m["rss_mb"],
            m["tokens"],
            m["turns"],
            m["score"],
        )
    same = sum(a == b for a, b in zip(new["greedy_texts"], old["greedy_texts"], strict=True))
    log.info("ratio kv-cached / re-encoding: %.2fx faster", old["seconds"] / new["seconds"])
    episode_rate = new["tokens"] * new["episodes"] / new["seconds"]
    log.info(
        "tokens/s: episodes %.0f (model turns and tool results), single-turn sampling from the "
        "same prompts %.0f: episodes at %.2fx the speed of single-turn generation",
        episode_rate,
        new["single_turn_tokens_per_s"],
        episode_rate / new["single_turn_tokens_per_s"],
    )
    log.info("greedy episodes identical on both paths: %d/%d", same, len(new["greedy_texts"]))
    if args.grpo_steps:
        import tempfile

        with tempfile.TemporaryDirectory() as out:
            arms = grpo_steps(model_dir, args.grpo_steps, Path(out))
        for name, m in arms.items():
            log.info(
                "GRPO %-16s %6.1f s/step (generation %5.1f s, update %5.1f s), completion %3.0f",
                name,
                m["step_s"],
                m["generation_s"],
                m["update_s"],
                m["length"],
            )
        math_s = arms["math"]["step_s"]
        for name in ("agent, episodes", "agent, TRL loop"):
            log.info("GRPO %s / math: %.2fx", name, arms[name]["step_s"] / math_s)
        for name in ("agent", "math"):  # the lean update vs its parts and TRL's padded forward
            lean = arms[name if name == "math" else "agent, episodes"]
            for baseline, what in (
                ("all rows", "every row"),
                ("TRL forward", "TRL's padded forward"),
            ):
                other = arms[f"{name}, {baseline}"]
                log.info(
                    "GRPO %s update: %.2fx faster than with %s (%.1f s vs %.1f s)",
                    name,
                    other["update_s"] / lean["update_s"],
                    what,
                    lean["update_s"],
                    other["update_s"],
                )


if __name__ == "__main__":
    main()
