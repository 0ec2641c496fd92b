"""The resource plan against measured peak memory: training steps on CPU, predicted vs measured.

    python scripts/calibrate_plan.py            # every case, one table
    python scripts/calibrate_plan.py --cases tiny-256 smollm2-512

Each case trains two optimizer steps of a model built from its config (random weights, fp32,
no download) the way TRL's trainers do: the fused LM head for the log-probs, AdamW, gradients
set to None between steps, with or without gradient checkpointing. It runs in a fresh process
that samples the C allocator's bytes in use (glibc ``mallinfo2``: arena plus mmapped blocks,
the CPU's counterpart of ``torch.cuda.max_memory_allocated``) every millisecond; measured =
the peak during the steps less the bytes in use before the model was built. Predicted = the
plan's weights + gradients + optimizer + activations + logits for the same workload
(``rlvr.planning.memory``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TINY = {"vocab_size": 512, "hidden_size": 192, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "tie_word_embeddings": True,
        "model_type": "qwen2"}  # fmt: skip
QWEN05 = {"vocab_size": 512, "hidden_size": 896, "num_hidden_layers": 24,
          "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
          "tie_word_embeddings": True, "model_type": "qwen2"}  # fmt: skip
SMOLLM2 = {"vocab_size": 49152, "hidden_size": 576, "num_hidden_layers": 30,
           "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
           "tie_word_embeddings": True, "model_type": "llama"}  # fmt: skip


@dataclass(frozen=True)
class Case:
    name: str
    config: dict
    rows: int
    sequence: int
    checkpointing: bool = False


CASES = {
    c.name: c
    for c in (
        Case("tiny-256", TINY, 16, 256),
        Case("tiny-512", TINY, 16, 512),
        Case("smollm2-256", SMOLLM2, 4, 256),
        Case("smollm2-512", SMOLLM2, 2, 512),
        Case("smollm2-1024-ckpt", SMOLLM2, 2, 1024, True),
        Case("qwen2.5-0.5b-shape-512", QWEN05, 2, 512),
        Case("qwen2.5-0.5b-shape-1024-ckpt", QWEN05, 1, 1024, True),
    )
}


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]  # fmt: skip


def in_use_bytes() -> int:
    """Bytes glibc's malloc has handed out and not taken back (arena + mmapped blocks)."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


class PeakSampler(threading.Thread):
    """The largest ``in_use_bytes`` seen, sampled every millisecond (torch's kernels release
    the GIL, so the sampler runs while they compute)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = in_use_bytes()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, in_use_bytes())
            time.sleep(0.001)


def measure(case: Case) -> int:
    """Peak bytes two training steps of ``case`` add to the process (run in a fresh one)."""
    import torch
    import transformers
    from trl.trainer.utils import add_fused_lm_head

    torch.manual_seed(0)
    kind = case.config["model_type"]
    config_class = transformers.AutoConfig.for_model(kind)
    config = type(config_class)(**{k: v for k, v in case.config.items() if k != "model_type"})
    model_class = transformers.AutoModelForCausalLM.from_config
    ids = torch.randint(0, case.config["vocab_size"], (case.rows, case.sequence))
    base = in_use_bytes()
    sampler = PeakSampler()
    sampler.start()
    model = model_class(config, torch_dtype=torch.float32)
    if case.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    add_fused_lm_head(model, outputs=("log_probs",))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for _ in range(2):
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids,
                    fused_lm_head=True)  # fmt: skip
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sampler.stop.set()
    sampler.join()
    return sampler.peak - base


def predict(case: Case) -> dict[str, float]:
    from rlvr.planning.memory import Workload, memory
    from rlvr.planning.shapes import shape_from_config

    shape = shape_from_config(case.config, case.name)
    w = Workload(kind="train", processes=1, sharded=False, weight_bytes=4,
                 micro_batch=case.rows, accumulation=1, sequence=case.sequence,
                 completion=case.sequence, checkpointing=case.checkpointing)  # fmt: skip
    return memory(shape, w, None)


def run_case(name: str) -> dict:
    """Measure ``name`` in a fresh process; predicted and measured bytes and their ratio."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", name], capture_output=True, text=True,
        check=True, env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin",
                         "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    measured = int(out.stdout.strip().splitlines()[-1])
    parts = predict(CASES[name])
    predicted = sum(parts.values())
    return {"case": asdict(CASES[name]) | {"config": None}, "measured": measured,
            "predicted": predicted, "ratio": predicted / measured, "parts": parts}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.measure:
        print(measure(CASES[args.measure]))
        return
    rows = []
    print(f"{'case':<26} {'rows x tokens':>14} {'predicted':>10} {'measured':>10} {'ratio':>6}")
    for name in args.cases:
        r = run_case(name)
        rows.append(r)
        c = CASES[name]
        print(f"{name:<26} {f'{c.rows} x {c.sequence}':>14} {r['predicted'] / 2**30:>8.2f} G "
              f"{r['measured'] / 2**30:>8.2f} G {r['ratio']:>6.2f}", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
