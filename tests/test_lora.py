"""LoRA GRPO through the real entry point: the final folder holds merged full weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model
from tasks import micro

pytestmark = pytest.mark.slow

SPEC = TinyModelSpec(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
)


def guessing_model(cache: Path, out: Path) -> Path:
    """The tiny model rewired so its first token is 'A', 'B' or a newline, about evenly.

    A random tiny model never answers, so every GRPO group scores all zeros and there is no
    gradient; a policy guessing two-option questions gives groups with reward variance.
    Residual dimension 0 carries +10 for the favoured tokens (and the prompt's last token)
    and -10 for the rest; no layer writes to it and it dominates the final norm, so with the
    tied embeddings the favoured tokens get the large logits."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = ensure_tiny_model(cache, SPEC)
    tok = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src)
    row = micro.generate("science", 1, seed=0, difficulty=1, split="train")[0]
    prompt = tok.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)
    prompt = prompt["input_ids"] if hasattr(prompt, "keys") else prompt
    favoured = [tok.encode(c, add_special_tokens=False)[0] for c in "AB"] + [prompt[-1]]
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        emb[:, 0] = -10.0
        emb[favoured, 0] = 10.0
        model.model.norm.weight.fill_(0.5)  # the other dimensions still reach the logits
        model.model.norm.weight[0] = 1.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight[0].zero_()
            layer.mlp.down_proj.weight[0].zero_()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def run_lora(tmp_path: Path, start: Path) -> Path:
    output_root = tmp_path / "runs"
    args = [
        "peft=lora",
        "sft=none",
        "logger=none",
        f"init_from={start}",
        "domains=[science]",
        "+mixture.difficulty.science=1",  # two-option questions
        "mixture.train_size=16",
        "mixture.heldout_size=0",
        "algo.num_generations=8",
        "algo.prompts_per_step=2",
        "algo.max_completion_length=1",
        "algo.learning_rate=1e-2",
        "trainer.max_steps=2",
        "trainer.save_steps=0",
        "trainer.verifier_workers=1",
        f"paths.output_root={output_root}",
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_CACHE": str(tmp_path / "cache"),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "rlvr.train", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (folder,) = [p.parent for p in output_root.glob("*/*/summary.json")]
    return folder


def parameters(path: Path) -> dict:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path)
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_two_step_lora_run_saves_merged_full_weights(tmp_path):
    import torch

    start = guessing_model(tmp_path / "cache", tmp_path / "start")
    folder = run_lora(tmp_path, start)

    metrics = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "grad_norm" in m]
    assert len(steps) == 2
    assert any(m["grad_norm"] > 0 for m in steps), "no reward variance: nothing to learn"

    final = folder / "final"
    assert (final / "config.json").is_file() and (final / "model.safetensors").is_file()
    assert not (final / "adapter_config.json").exists(), "adapters must be merged, not saved"
    before, after = parameters(start), parameters(final)
    assert after.keys() == before.keys()
    assert not any("lora" in name for name in after)
    changed = {n for n in before if not torch.equal(before[n], after[n])}
    assert changed, "merged weights equal the starting weights"
    # LoRA adapts linear layers only; the embedding (tied to the output layer) stays as it was
    assert all(".layers." in n and n.endswith("proj.weight") for n in changed), changed
    assert torch.equal(before["model.embed_tokens.weight"], after["model.embed_tokens.weight"])
