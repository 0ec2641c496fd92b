"""A stage for the warm-start tests: one forward and backward of a small Qwen2 model from a
fixed seed, writing a digest of every gradient (``python -m tests.support.numerics_stage OUT``)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def main() -> None:
    from rlvr.runs.cli import configure_threads

    configure_threads()  # as every stage's entry point does
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=300,
        hidden_size=192,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=512,
    )
    model = Qwen2ForCausalLM(config)
    ids = torch.randint(0, 300, (16, 200))
    model(input_ids=ids, labels=ids).loss.backward()
    lines = [f"threads={torch.get_num_threads()}"]
    for name, param in model.named_parameters():
        lines.append(f"{name} {hashlib.sha256(param.grad.numpy().tobytes()).hexdigest()[:16]}")
    out = Path(sys.argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
