"""MT-OPD at size: the paper's optimizer settings reach TRL; the held-out KL adds up over
ranks and keeps sharded teachers in lockstep; on two FSDP2 processes the teachers are
sharded as they load and the stage ends with the held-out KL on every rank."""

from __future__ import annotations

import math

import pytest
import torch
from test_distill import compose_run, small_model


def test_the_papers_optimizer_settings_reach_trls_config(tmp_path):
    from rlvr.distillation.trainer import build_distill_config

    run = compose_run(
        "stage=distill",
        "distill=m2rl",
        "distill.adam_beta1=0.85",
        "distill.adam_beta2=0.98",
        "distill.weight_decay=0.1",
        f"+distill.teachers.math={small_model(tmp_path, 1)}",
    )
    args = build_distill_config(run, tmp_path / "out")
    assert (args.adam_beta1, args.adam_beta2, args.weight_decay) == (0.85, 0.98, 0.1)
    assert args.learning_rate == run.distill.learning_rate == 1e-6


def held_out_rows(domains: dict[str, int]) -> list[dict]:
    prompt = [{"role": "user", "content": "What is 2 + 3?"}]
    return [{"prompt": prompt, "domain": d} for d, n in domains.items() for _ in range(n)]


def test_lockstep_runs_every_teacher_in_every_batch_and_keeps_the_sums(tmp_path):
    """One process, teachers counting their forwards: lockstep adds stand-in batches and
    stand-in rows (every teacher, every batch) without changing a single sum."""
    from rlvr.distillation.heldout import add_sums, batches_per_rank, kl_means, kl_sums
    from rlvr.models.loading import load_model, load_tokenizer
    from rlvr.models.tiny import ensure_tiny_model

    path = ensure_tiny_model(tmp_path / "models")
    student = load_model(str(path), compose_run().model)
    teachers = {
        d: load_model(str(small_model(tmp_path, s)), compose_run().model) for d, s in (("math", 1), ("science", 2))
    }
    calls = {d: 0 for d in teachers}
    for d, model in teachers.items():
        model.register_forward_pre_hook(lambda *_, d=d: calls.__setitem__(d, calls[d] + 1))
    rows = held_out_rows({"math": 2, "science": 1})
    tok = load_tokenizer(str(path), compose_run().model)
    kwargs = dict(samples=2, max_new_tokens=5, batch_size=2, seed=3)
    plain = kl_sums(student, teachers, tok, rows, **kwargs)
    assert calls == {"math": 2, "science": 1}  # one batch per row, one teacher per batch
    calls.update(math=0, science=0)
    batches = batches_per_rank(6, 2, batch_size=2, samples=2)  # 6 rows on 2 ranks: 3 each
    locked = kl_sums(student, teachers, tok, rows, lockstep=(batches, rows[0]), **kwargs)
    assert calls == {"math": 3, "science": 3}  # 3 batches (one a stand-in), both teachers
    assert locked == plain and set(plain) == {"math", "science"}
    doubled = kl_means(add_sums([plain, plain]))
    assert doubled["math"]["tokens"] == 2 * plain["math"][1]
    assert doubled["math"]["kl"] == pytest.approx(plain["math"][0] / plain["math"][1])
    assert doubled["math"]["kl"] > 0


@pytest.mark.slow
def test_mt_opd_on_two_fsdp2_ranks_shards_teachers_as_they_load_and_ends_with_heldout_kl(tmp_path, rlvr_cache):
    """Real ``accelerate launch`` (cpu_fsdp2.yaml, gloo, FSDP2 through fsdp_on_cpu): the math
    teacher is another model, the science teacher is the student itself, so a teacher loaded
    wrongly (weights, tied head, rotary buffers) shows as a nonzero science KL at the start."""
    from test_gpu_configs import free_port
    from test_multiprocess import launch_env

    from tests.support.two_ranks import run_two_ranks

    student, other = small_model(rlvr_cache, 0), small_model(rlvr_cache, 1)
    overrides = [
        "experiment=smoke",
        "logger=none",
        "sft=none",
        "trainer.verifier_workers=1",
        f"paths.output_root={tmp_path / 'runs'}",
        f"init_from={student}",
        "domains=[math,science]",
        f"+distill.teachers.math={other}",
        f"+distill.teachers.science={student}",
        "mixture=weighted",
        "mixture.train_size=8",
        "mixture.heldout_size=3",
        "distill.prompts_per_step=2",
        "distill.samples_per_prompt=2",
        "distill.max_completion_length=6",
        "trainer.max_steps=2",
        "trainer.save_steps=0",
        "trainer.micro_batch=1",
        "eval.k=2",
        "eval.batch_size=2",
        "eval.max_new_tokens=6",
        "eval.greedy=false",
    ]
    done = run_two_ranks(
        "tests.support.distill_two_ranks",
        [str(tmp_path), *overrides],
        launch_env(rlvr_cache),
        free_port(),
        fsdp=True,
        timeout=600,  # a rank left alone in a collective fails here, not at gloo's time-out
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    ranks = torch.load(tmp_path / "result.pt", weights_only=False)
    assert [r["steps"] for r in ranks] == [2, 2]
    for domain in ("math", "science"):
        held = [r["teacher_elements"][domain] for r in ranks]
        total = held[0]["total"]
        assert sum(h["here"] for h in held) == total, held  # the shards partition the teacher
        assert all(0.4 * total <= h["here"] <= 0.6 * total for h in held), held
    kl = [r["heldout_kl"] for r in ranks]
    assert kl[0] == kl[1]  # reduced over the ranks: one number everywhere
    for when in ("start", "distilled"):
        assert set(kl[0][when]) == {"math", "science"}
        assert all(math.isfinite(v["kl"]) and v["tokens"] > 0 for v in kl[0][when].values())
    assert kl[0]["start"]["math"]["kl"] > 1e-3
    assert abs(kl[0]["start"]["science"]["kl"]) < 1e-5  # its teacher is the student
