"""The tiny model learns the fork-join format from SFT, and P-GRPO's acceleration term
raises its acceleration while held-out Avg@k stays within 2 points (experiment tiny_parallel)."""

from __future__ import annotations

import pytest

from rlvr.parallel import measure, token_counter

pytestmark = pytest.mark.slow

OVERRIDES = [
    "experiment=tiny_parallel",
    "logger=none",
    "eval.in_run=false",  # measured below, on the same prompts and seeds before and after
    "sft.max_steps=200",
    "trainer.max_steps=20",
    "mixture.train_size=400",
    "mixture.heldout_size=32",
]


def sampled(model_path: str, rows: list[dict], run) -> dict[str, float]:
    """Avg@k, valid-block rate and mean acceleration (policy tokens) over k samples a row."""
    from rlvr.evaluation.generation import Decoding
    from rlvr.evaluation.heldout import sample_and_score
    from rlvr.models import load_model, load_tokenizer
    from rlvr.stages import make_scorer

    model, tokenizer = load_model(model_path, run.model), load_tokenizer(model_path, run.model)
    decoding = Decoding(k=8, temperature=1.0, max_new_tokens=run.eval.max_new_tokens)
    texts, verdicts = sample_and_score(
        model, tokenizer, rows, decoding, make_scorer(run), batch_size=64, seed=7
    )
    count = token_counter(tokenizer)
    measured = [measure(t, count) for row in texts for t in row]
    scores = [v.score for row in verdicts for v in row]
    return {
        "avg_at_k": sum(scores) / len(scores),
        "valid_block_rate": sum(m.trace.parallel for m in measured) / len(measured),
        "acceleration": sum(m.acceleration for m in measured) / len(measured),
    }


def test_sft_learns_parallel_blocks_and_p_grpo_raises_acceleration(tmp_path):
    from hydra import compose, initialize_config_dir

    from rlvr.cli import CONF_DIR, register_resolvers
    from rlvr.config import register_configs, to_config
    from rlvr.data import build_domain_data
    from rlvr.train import train

    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(
            "train", overrides=[*OVERRIDES, "run_name=t", f"paths.output_root={tmp_path}"]
        )
    run = to_config(cfg)
    run_dir = tmp_path / "run"
    summary = train(run, run_dir)
    rows = [r for d in build_domain_data(run).values() for r in d.heldout]
    before = sampled(str(run_dir / "sft" / "final"), rows, run)
    after = sampled(str(run_dir / "final"), rows, run)
    print({"before": before, "after": after, "rl_s": summary["rl"]["seconds"]})
    assert before["valid_block_rate"] >= 0.8
    assert after["acceleration"] > before["acceleration"]
    assert abs(after["avg_at_k"] - before["avg_at_k"]) <= 0.02
