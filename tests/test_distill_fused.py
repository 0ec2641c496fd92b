"""MT-OPD at real sizes: the sampled-token loss through TRL's fused LM head equals the one
from whole logits (log-probs, entropies, gradients), and on 2 processes under FSDP2 the
teachers are sharded and every rank runs every teacher, so routing cannot deadlock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_gpu_configs import free_port
from test_multiprocess import launch_env

from rlvr.distillation.teachers import completion_token_logprobs, fuse_lm_head

REPO = Path(__file__).resolve().parents[1]


def batch_of(vocab: int, rows: int = 3, prompt: int = 5, completion: int = 7) -> dict:
    g = torch.Generator().manual_seed(0)
    completion_mask = torch.ones(rows, completion, dtype=torch.long)
    completion_mask[0, 4:] = 0  # a row that ended early
    prompt_mask = torch.ones(rows, prompt, dtype=torch.long)
    prompt_mask[1, :2] = 0  # left padding
    return {
        "prompt_ids": torch.randint(0, vocab, (rows, prompt), generator=g),
        "prompt_mask": prompt_mask,
        "completion_ids": torch.randint(0, vocab, (rows, completion), generator=g),
        "completion_mask": completion_mask,
    }


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_fused_head_gives_the_whole_logits_log_probs_entropies_and_gradients(tiny_model_dir, temperature):
    from transformers import AutoModelForCausalLM

    whole = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    fused = fuse_lm_head(AutoModelForCausalLM.from_pretrained(tiny_model_dir), temperature)
    batch = batch_of(whole.config.vocab_size)
    mask = batch["completion_mask"].float()
    results = []
    for model in (whole, fused):
        model.zero_grad()
        logprobs, entropy = completion_token_logprobs(model, batch, temperature)
        (logprobs * mask).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((logprobs.detach() * mask, entropy * mask, grads))
    (lp_a, ent_a, grad_a), (lp_b, ent_b, grad_b) = results
    torch.testing.assert_close(lp_b, lp_a, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent_b, ent_a, rtol=1e-5, atol=1e-5)
    assert grad_a.keys() == grad_b.keys() and grad_a
    for name in grad_a:  # relative to the whole tensor: float32 sums of the two paths round
        # apart by ~1e-6 on its smallest entries, by how much depends on the CPU's kernels
        error = (grad_b[name] - grad_a[name]).norm() / grad_a[name].norm().clamp(min=1e-12)
        assert error < 1e-5, (name, float(error))


def test_a_model_fused_at_another_temperature_is_scored_from_whole_logits(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    fused = fuse_lm_head(AutoModelForCausalLM.from_pretrained(tiny_model_dir), 1.0)
    batch = batch_of(plain.config.vocab_size)
    with torch.no_grad():
        a, _ = completion_token_logprobs(plain, batch, 0.5)
        b, _ = completion_token_logprobs(fused, batch, 0.5)
    torch.testing.assert_close(a, b)


@pytest.mark.slow
def test_mt_opd_on_two_fsdp2_processes_shards_its_teachers(tmp_path, rlvr_cache, sft_checkpoint):
    """Two domains, two teachers, one prompt per rank per micro-batch: every micro-batch has a
    rank without one of the domains, which must still run that teacher's sharded forward."""
    from rlvr.models.tiny import ensure_tiny_model

    student = ensure_tiny_model(rlvr_cache / "models")
    out = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(REPO / "conf/accelerate/gpu_fsdp2.yaml"),
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--machine_rank",
        "0",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(free_port()),
        "--rdzv_backend",
        "static",
        "--mixed_precision",
        "no",
        "-m",
        "tests.support.fsdp_on_cpu",
        "rlvr.distill",
        "experiment=smoke",
        "logger=none",
        "sft=none",
        "trainer.verifier_workers=1",
        f"paths.output_root={out}",
        f"init_from={student}",
        "domains=[math,science]",
        f"+distill.teachers.math={sft_checkpoint}",
        f"+distill.teachers.science={student}",
        "mixture=weighted",
        "mixture.train_size=8",
        "mixture.heldout_size=0",
        "distill.prompts_per_step=2",
        "distill.samples_per_prompt=2",
        "distill.max_completion_length=6",
        "trainer.max_steps=3",
        "trainer.save_steps=0",
        "trainer.micro_batch=1",
        "trainer.gradient_checkpointing=true",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=launch_env(rlvr_cache), capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    (summary_path,) = out.glob("*/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["rl"]["steps"] == 3 and summary["rl"]["teacher_s"] > 0
    assert log.count("sharded over 2 ranks") == 4, log[-3000:]  # 2 teachers x 2 ranks
    lines = (summary_path.parent / "metrics.jsonl").read_text().splitlines()
    kl = {k for m in map(json.loads, lines) for k in m if k.endswith("/kl")}
    assert {"math/kl", "science/kl"} <= {k.split("/", 1)[-1] if k.count("/") > 1 else k for k in kl}, kl
