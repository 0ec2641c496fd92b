"""The resource plan against measured peak memory: training steps on CPU, predicted vs measured.

    python scripts/calibrate_plan.py            # every case, one table
    python scripts/calibrate_plan.py --cases tiny-256 smollm2-512

Each case trains two optimizer steps of a model built from its config (random weights, no
download) the way TRL's trainers do: the fused LM head for the log-probs, AdamW, gradients set
to None between steps, with or without gradient checkpointing, on full rows or on padded ones
(sdpa then builds its B x 1 x S x S mask). Precision: ``fp32`` (float32 weights and compute),
``autocast`` (float32 weights, bf16 autocast: single-process mixed precision), ``fsdp2``
(weights loaded in bf16, ``accelerate launch`` of two gloo ranks under FSDP2 with bf16 mixed
precision, as ``conf/accelerate/gpu_fsdp2.yaml`` runs on GPUs: Accelerate upcasts the trainable
weights to float32 masters). Each runs in fresh processes that sample the C allocator's bytes
in use (glibc ``mallinfo2``: arena plus mmapped blocks, the CPU's counterpart of
``torch.cuda.max_memory_allocated``) every millisecond; measured = the peak during the steps
less the bytes in use before the model was built (the larger rank's under FSDP2). Predicted =
the plan's parts for the same workload (``rlvr.planning.memory``), never less than measured
and at most 25% more for every case (tests/test_plan_calibration.py).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TINY = {
    "vocab_size": 512,
    "hidden_size": 192,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "tie_word_embeddings": True,
    "model_type": "qwen2",
}
QWEN05 = {
    "vocab_size": 512,
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "tie_word_embeddings": True,
    "model_type": "qwen2",
}
# a Qwen2 shape with a real-sized tied vocabulary (its root unit counts) and few tokens (bf16
# matmuls are slow on CPUs without bf16 units), for the FSDP2 ranks
QWEN_VOCAB = {
    "vocab_size": 32768,
    "hidden_size": 512,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 2048,
    "tie_word_embeddings": True,
    "model_type": "qwen2",
}
SMOLLM2 = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "intermediate_size": 1536,
    "tie_word_embeddings": True,
    "model_type": "llama",
}


@dataclass(frozen=True)
class Case:
    name: str
    config: dict
    rows: int
    sequence: int
    checkpointing: bool = False
    precision: str = "fp32"  # fp32 | autocast | fsdp2 (two ranks, bf16 mixed precision)
    padded: bool = False  # rows left-padded: sdpa builds its 4D mask


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
        Case("tiny-256-autocast", TINY, 4, 256, precision="autocast"),
        Case("tiny-256-autocast-padded", TINY, 4, 256, precision="autocast", padded=True),
        Case("qwen2-fsdp2-128", QWEN_VOCAB, 1, 128, precision="fsdp2"),
        Case("qwen2-fsdp2-256-ckpt-padded", QWEN_VOCAB, 1, 256, True, "fsdp2", True),
    )
}


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


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


def _inputs(case: Case):
    import torch

    torch.manual_seed(0)
    ids = torch.randint(0, case.config["vocab_size"], (case.rows, case.sequence))
    mask = torch.ones_like(ids)
    if case.padded:  # a left-padded prompt in the first row, as GRPO's batches have
        mask[0, : case.sequence // 8] = 0
    return ids, mask


def _build(case: Case, dtype):
    import transformers

    kind = case.config["model_type"]
    config_class = transformers.AutoConfig.for_model(kind)
    config = type(config_class)(**{k: v for k, v in case.config.items() if k != "model_type"})
    model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype, attn_implementation="sdpa")
    if case.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    return model


def _steps(model, optimizer, ids, mask, backward, autocast: bool) -> None:
    import torch

    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, attention_mask=mask, labels=ids, fused_lm_head=True)
        backward(out.loss)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def measure(case: Case) -> int:
    """Peak bytes two training steps of ``case`` add to the process (run in a fresh one)."""
    import torch
    from trl.trainer.utils import add_fused_lm_head

    ids, mask = _inputs(case)
    base = in_use_bytes()
    sampler = PeakSampler()
    sampler.start()
    model = _build(case, torch.float32)
    add_fused_lm_head(model, outputs=("log_probs",))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    _steps(model, optimizer, ids, mask, lambda loss: loss.backward(), case.precision == "autocast")
    sampler.stop.set()
    sampler.join()
    return sampler.peak - base


def measure_rank(case: Case) -> None:
    """One FSDP2 rank (under ``accelerate launch``): its peak bytes, printed as ``peak <n>``.
    The model is loaded in bf16 and prepared by Accelerate (float32 masters, bf16 compute);
    sampling starts once it is sharded (on GPUs only the shards ever reach the device)."""
    import torch
    from accelerate import Accelerator
    from trl.trainer.utils import add_fused_lm_head

    accelerator = Accelerator()
    ids, mask = _inputs(case)
    base = in_use_bytes()
    model = _build(case, torch.bfloat16)
    add_fused_lm_head(model, outputs=("log_probs",))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model, optimizer = accelerator.prepare(model, optimizer)
    sampler = PeakSampler()
    sampler.start()
    _steps(model, optimizer, ids, mask, accelerator.backward, autocast=False)
    sampler.stop.set()
    sampler.join()
    print(f"peak {sampler.peak - base}", flush=True)
    torch.distributed.barrier()
    os._exit(0)  # past the last collective: skip gloo's teardown (tests/support/two_ranks.py)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _measure_fsdp2(name: str, env: dict) -> int:
    """The larger rank's peak of two FSDP2 ranks (``tests.support.fsdp_on_cpu`` lets
    Accelerate pick FSDP for gloo CPU processes; the rest is Accelerate's and torch's code)."""
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(REPO / "conf/accelerate/cpu_fsdp2.yaml"),
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--machine_rank",
        "0",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(_free_port()),
        "--rdzv_backend",
        "static",
        "--mixed_precision",
        "bf16",
        "-m",
        "tests.support.fsdp_on_cpu",
        "scripts.calibrate_plan",
        "--measure-rank",
        name,
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    peaks = [int(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("peak ")]
    if out.returncode or len(peaks) != 2:
        raise RuntimeError(f"FSDP2 case {name} failed:\n{(out.stdout + out.stderr)[-3000:]}")
    return max(peaks)


def workload(case: Case):
    """The plan's workload for ``case``: widths as the case's runtime stores them."""
    from rlvr.planning.memory import Workload

    width = {"fp32": (4, 4, 4), "autocast": (2, 4, 4), "fsdp2": (2, 4, 2)}[case.precision]
    compute, master, frozen = width
    fsdp = case.precision == "fsdp2"
    return Workload(
        kind="train",
        processes=2 if fsdp else 1,
        sharded=fsdp,
        weight_bytes=compute,
        master_bytes=master,
        frozen_bytes=frozen,
        micro_batch=case.rows,
        accumulation=1,
        sequence=case.sequence,
        completion=case.sequence,
        checkpointing=case.checkpointing,
        attention_mask=case.padded,
    )


def predict(case: Case) -> dict[str, float]:
    from rlvr.planning.memory import memory
    from rlvr.planning.shapes import shape_from_config

    return memory(shape_from_config(case.config, case.name), workload(case), None)


def run_case(name: str) -> dict:
    """Measure ``name`` in fresh processes; predicted and measured bytes and their ratio."""
    env = {
        "OMP_NUM_THREADS": "2",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
    }
    if CASES[name].precision == "fsdp2":
        measured = _measure_fsdp2(name, env | {"OMP_NUM_THREADS": "1"})
    else:
        out = subprocess.run(
            [sys.executable, __file__, "--measure", name],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        measured = int(out.stdout.strip().splitlines()[-1])
    parts = predict(CASES[name])
    predicted = sum(parts.values())
    return {
        "case": asdict(CASES[name]) | {"config": None},
        "measured": measured,
        "predicted": predicted,
        "ratio": predicted / measured,
        "parts": parts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--measure-rank", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.measure:
        print(measure(CASES[args.measure]))
        return
    if args.measure_rank:
        measure_rank(CASES[args.measure_rank])
        return
    rows = []
    print(f"{'case':<30} {'rows x tokens':>14} {'predicted':>10} {'measured':>10} {'ratio':>6}")
    for name in args.cases:
        r = run_case(name)
        rows.append(r)
        c = CASES[name]
        print(
            f"{name:<30} {f'{c.rows} x {c.sequence}':>14} {r['predicted'] / 2**30:>8.2f} G "
            f"{r['measured'] / 2**30:>8.2f} G {r['ratio']:>6.2f}",
            flush=True,
        )
        print("    " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in r["parts"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
