"""Benchmark the streaming weight analyses (footprint + geometry) against holding every model.

python scripts/bench_analyze.py                       # Qwen2-0.5B shape, 5 experts, float32
python scripts/bench_analyze.py --dtype bfloat16 --experts 3 --out /scratch/bench

Builds, locally and from a config (no download), a Qwen2-0.5B-shaped "SFT" model with random
weights saved as ~500 MB safetensors shards with an index, and ``--experts`` perturbed copies:
each expert moves a shared 1% of the weights plus a support of its own (2%, 3%, ... of the
weights), so the changed masks overlap more than random masks would. Then, each in its own
process, it runs the streamed analyses (``rlvr.analysis``) and the naive in-memory baseline
(``rlvr.analysis.reference``), and prints peak RSS, wall time, their ratios and the largest
difference between the two results. The naive baseline runs where it fits in half the free
memory; otherwise both run again on a smaller shape (2 layers, 16k vocabulary) for the ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHAPES = {  # Qwen2.5-0.5B's config, and a small one of the same widths
    "0.5b": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=151936,
    ),
    "small": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=2,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=16384,
    ),
}
SHARD_BYTES = 500 << 20


def parameter_shapes(shape: str) -> tuple[dict[str, tuple[int, ...]], object]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(**SHAPES[shape], tie_word_embeddings=True)
    with torch.device("meta"):
        model = Qwen2ForCausalLM(config)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}, config


def _shards(shapes: dict[str, tuple[int, ...]], itemsize: int) -> list[list[str]]:
    shards: list[list[str]] = [[]]
    size = 0
    for name, shape in shapes.items():
        nbytes = math.prod(shape) * itemsize
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    return shards


def build(out: Path, shape: str, experts: int, dtype: torch.dtype) -> list[Path]:
    """The SFT model and the experts as sharded safetensors folders, one shard in memory."""
    from safetensors.torch import save_file

    shapes, config = parameter_shapes(shape)
    folders = [out / "sft"] + [out / f"expert{i}" for i in range(experts)]
    shards = _shards(shapes, torch.tensor([], dtype=dtype).element_size())
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        config.save_pretrained(folder)
    weight_map = {}
    g = torch.Generator().manual_seed(0)
    for s, names in enumerate(shards):
        file = f"model-{s + 1:05d}-of-{len(shards):05d}.safetensors"
        base = {}
        for n in names:
            t = torch.ones(shapes[n]) if "norm" in n else 0.02 * torch.randn(shapes[n], generator=g)
            base[n] = t.to(dtype)
        save_file(base, str(folders[0] / file))
        for i, folder in enumerate(folders[1:]):
            save_file({n: _perturb(t, i, g) for n, t in base.items()}, str(folder / file))
        weight_map.update(dict.fromkeys(names, file))
    index = {"metadata": {}, "weight_map": weight_map}
    for folder in folders:
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folders


def _perturb(t: torch.Tensor, expert: int, g: torch.Generator) -> torch.Tensor:
    """A shared 1% of the entries (the same for every expert) plus (2 + expert)% of its own."""
    flat = t.reshape(-1).clone()
    n = flat.numel()
    shared = torch.randint(0, n, (max(1, n // 100),), generator=torch.Generator().manual_seed(n))
    own = torch.randint(0, n, (max(1, n * (2 + expert) // 100),), generator=g)
    idx = torch.cat([shared, own])
    flat[idx] = flat[idx] + (0.01 * torch.randn(idx.numel(), generator=g)).to(t.dtype)
    return flat.view(t.shape)


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM: unlike ru_maxrss, it starts afresh at exec and
    so does not count the memory of the parent the child was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, folders: list[Path], result: Path) -> None:
    """One measured run in this process: the streamed analyses or the naive baseline."""
    from rlvr.analysis import reference, registry
    from rlvr.analysis.inventory import ModelSpec
    from rlvr.config import AnalyzeConfig

    start = time.perf_counter()
    models = [ModelSpec(f.name, "expert", f) for f in folders[1:]]
    if mode == "stream":
        cfg = AnalyzeConfig()
        analyses = registry.build(cfg, models)
        registry.weight_pass(analyses, folders[0], models, cfg.chunk_elements, cfg.mapped_mb)
        for a in analyses:
            a.write(result.parent / "analysis")
        fp, geo = analyses[0].result(), analyses[1].result()  # type: ignore[attr-defined]
        values = {"overlap": fp.overlap, "gram": geo.gram, "projected": geo.projected}
    else:
        ref = reference.analyse(folders[0], [m.path for m in models])
        values = {"overlap": ref.overlap, "gram": ref.gram, "projected": ref.projected}
    wall = time.perf_counter() - start
    torch.save(values, result)
    print(json.dumps({"wall_s": wall, "peak_rss_mb": peak_rss_mb()}))


def measure(mode: str, folders: list[Path], out: Path) -> dict:
    result = out / f"{mode}.pt"
    cmd = [sys.executable, __file__, "--child", mode, "--out", str(out)]
    cmd += [str(f) for f in folders]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"failed": proc.stderr[-600:] or f"exit {proc.returncode}"}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "values": torch.load(result)}


def free_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench(out: Path, shape: str, experts: int, dtype: torch.dtype, naive: str) -> dict:
    start = time.perf_counter()
    folders = build(out / shape, shape, experts, dtype)
    params = sum(math.prod(s) for s in parameter_shapes(shape)[0].values())
    row = {"shape": shape, "params": params, "models": experts + 1, "build_s": 0.0}
    row["build_s"] = time.perf_counter() - start
    row["stream"] = measure("stream", folders, out / shape)
    need_mb = 3.5 * 4 * params * (experts + 1) / 2**20  # flat copies, stacked, delta, mask
    if naive == "yes" or (naive == "auto" and need_mb < free_mb() / 2):
        row["naive"] = measure("naive", folders, out / shape)
    else:
        row["naive"] = {"skipped": f"needs ~{need_mb / 1024:.0f} GB, {free_mb() / 1024:.0f} GB free"}
    return row


def show(row: dict) -> None:
    s, n = row["stream"], row["naive"]
    head = f"{row['shape']}: {row['params'] / 1e6:.0f}M parameters x {row['models']} models"
    print(f"{head} (built in {row['build_s']:.0f} s)")
    if "failed" in s:
        print(f"  streamed: failed: {s['failed']}")
        return
    print(f"  streamed: peak RSS {s['peak_rss_mb']:.0f} MB, {s['wall_s']:.1f} s")
    if "peak_rss_mb" not in n:
        print(f"  naive:    {n.get('skipped') or n.get('failed')}")
        return
    print(f"  naive:    peak RSS {n['peak_rss_mb']:.0f} MB, {n['wall_s']:.1f} s")
    ratio_rss = n["peak_rss_mb"] / s["peak_rss_mb"]
    print(f"  naive / streamed: RSS x{ratio_rss:.2f}, time x{n['wall_s'] / s['wall_s']:.2f}")
    sv, nv = s["values"], n["values"]
    same = torch.equal(sv["overlap"], nv["overlap"])
    gram = ((sv["gram"] - nv["gram"]).abs().max() / nv["gram"].abs().max()).item()
    proj = ((sv["projected"] - nv["projected"]).abs().max() / nv["projected"].abs().max()).item()
    print(
        f"  streamed = naive: changed masks {'identical' if same else 'DIFFER'}, "
        f"Gram rel. diff {gram:.1e}, projection rel. diff {proj:.1e}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/bench_analyze"))
    p.add_argument("--shape", choices=sorted(SHAPES), default="0.5b")
    p.add_argument("--experts", type=int, default=5)
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--naive", choices=["auto", "yes", "no"], default="auto")
    p.add_argument("--keep", action="store_true", help="keep the built models")
    p.add_argument("--child", choices=["stream", "naive"], help=argparse.SUPPRESS)
    p.add_argument("folders", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        torch.set_num_threads(torch.get_num_threads())
        child(args.child, args.folders, args.out / f"{args.child}.pt")
        return
    dtype = getattr(torch, args.dtype)
    need_gb = (
        1.1
        * (args.experts + 1)
        * sum(math.prod(s) for s in parameter_shapes(args.shape)[0].values())
        * dtype.itemsize
        / 2**30
    )
    args.out.mkdir(parents=True, exist_ok=True)
    free_gb = shutil.disk_usage(args.out).free / 2**30
    if need_gb > free_gb:
        sys.exit(
            f"needs ~{need_gb:.0f} GB in {args.out}, {free_gb:.0f} GB free: use --dtype bfloat16 or fewer --experts"
        )
    print(f"{args.experts} experts, {args.dtype}, ~{need_gb:.1f} GB of weights in {args.out}")
    rows = [bench(args.out, args.shape, args.experts, dtype, args.naive)]
    if "peak_rss_mb" not in rows[0]["naive"] and args.shape != "small":
        rows.append(bench(args.out, "small", args.experts, dtype, "yes"))
    for row in rows:
        show(row)
    if not args.keep:
        for row in rows:
            shutil.rmtree(args.out / row["shape"], ignore_errors=True)


if __name__ == "__main__":
    main()
