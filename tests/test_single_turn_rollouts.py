"""GRPO's single-turn rollouts from the KV-cache sampler (rlvr.rollouts.single_turn) against TRL's
``model.generate`` path: same completions where both draw the argmax, TRL's end-token cut and
length limit, input order whatever the batch's order, reproducible from torch's seed."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from rlvr.models import tiny as tiny_model
from rlvr.rollouts.single_turn import group_prompts
from tasks import micro


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The embedded model with a wider initialisation, so greedy text varies and ends."""
    from rlvr.models.tiny import TinyModelSpec, build_model, build_tokenizer

    tok = build_tokenizer()
    spec = TinyModelSpec(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128
    )
    torch.manual_seed(0)
    model = build_model(spec, len(tok), tok.pad_token_id, tok.eos_token_id, initializer_range=0.3)
    folder = tmp_path_factory.mktemp("kv-rollouts-model")
    model.save_pretrained(folder)
    return folder


def build_trainer(model_dir, out, kv_sampling: bool, **overrides: Any):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from rlvr.training.grpo import RLVRGRPOTrainer

    rows = micro.generate("math", 6, seed=2, split="heldout")
    settings = dict(
        output_dir=str(out),
        per_device_train_batch_size=12,
        num_generations=4,
        max_completion_length=24,
        temperature=1e-4,
        top_k=0,
        beta=0.0,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
    )
    settings.update(overrides)
    return RLVRGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        processing_class=tiny_model.build_tokenizer(),
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=GRPOConfig(**settings),
        train_dataset=Dataset.from_list([{"prompt": r["prompt"]} for r in rows]),
        kv_sampling=kv_sampling,
    ), rows


def prompt_batch(trainer, rows, order: list[int]) -> list[list[int]]:
    ids = trainer._tokenize_prompts([r["prompt"] for r in rows])[0]
    return [list(ids[i]) for i in order]


def test_the_sampler_draws_what_trls_generate_draws_at_the_argmax(model_dir, tmp_path):
    ours, rows = build_trainer(model_dir, tmp_path / "a", True)
    trl, _ = build_trainer(model_dir, tmp_path / "b", False)
    assert ours.kv_sampling and not trl.kv_sampling
    # GRPO's layout (each prompt num_generations times in a row), an interleaved one, and
    # prompts repeated unequally (each row then drawn alone)
    for order in ([i for i in range(3) for _ in range(4)], [0, 1, 2, 0, 2, 1, 1, 2, 0], [4, 4, 5]):
        batch = prompt_batch(ours, rows, order)
        got, logprobs = ours._generate_single_turn(batch, None, {}, 4)
        want, _ = trl._generate_single_turn(batch, None, {}, 4)
        assert logprobs is None  # as TRL's transformers path returns
        assert got == want
    # a token the greedy text holds in some rows but not all, first at different places: as
    # the end token, rows end at different steps and some run to the limit
    batch = prompt_batch(ours, rows, list(range(6)))
    free, _ = ours._generate_single_turn(batch, None, {}, 4)
    end = next(
        t
        for t in sorted({t for c in free for t in c})
        if any(t not in c for c in free) and len({c.index(t) for c in free if t in c}) > 1
    )
    for trainer in (ours, trl):
        trainer.eos_token_ids = [end]
        trainer.generation_kwargs["eos_token_id"] = [end]
        trainer.generation_config.eos_token_id = [end]
    got, _ = ours._generate_single_turn(batch, None, {}, 4)
    assert got == trl._generate_single_turn(batch, None, {}, 4)[0]
    for full, cut in zip(free, got, strict=True):
        assert cut == (full[: full.index(end) + 1] if end in full else full)
    assert 24 in [len(c) for c in got] and any(c[-1] == end and len(c) < 24 for c in got)


def test_draws_follow_torchs_seed_and_samples_of_a_prompt_differ(model_dir, tmp_path):
    trainer, rows = build_trainer(model_dir, tmp_path, True, temperature=1.0)
    batch = prompt_batch(trainer, rows, [i for i in range(6) for _ in range(4)])
    torch.manual_seed(3)
    first, _ = trainer._generate_single_turn(batch, None, {}, 4)
    torch.manual_seed(3)
    again, _ = trainer._generate_single_turn(batch, None, {}, 4)
    other, _ = trainer._generate_single_turn(batch, None, {}, 4)
    assert first == again and first != other
    assert any(len({tuple(c) for c in first[i : i + 4]}) > 1 for i in range(0, 24, 4))


def test_settings_the_sampler_cannot_draw_keep_trls_generate(model_dir, tmp_path):
    from rlvr.rollouts import unsupported

    for overrides in ({"top_k": 5}, {"repetition_penalty": 1.2}, {"min_p": 0.1}):
        trainer, _ = build_trainer(model_dir, tmp_path / str(len(overrides)), True, **overrides)
        assert unsupported(trainer) is not None and not trainer.kv_sampling
        facts = trainer.generation_facts()
        assert facts["sampler"] == "trl" and facts["trl_sampler_because"] == unsupported(trainer)


def test_the_sampler_runs_on_data_parallel_and_fsdp_ranks_and_not_under_deepspeed():
    """DDP ranks hold whole weights: each samples from its unwrapped model alone. FSDP ranks
    sample in step (``rlvr.rollouts.lockstep``); DeepSpeed keeps TRL's generate."""
    from types import SimpleNamespace

    from accelerate.utils import DistributedType

    from rlvr.rollouts import data_parallel, unsupported

    def trainer(kind, processes=2):
        accelerator = SimpleNamespace(distributed_type=kind, num_processes=processes)
        return SimpleNamespace(
            accelerator=accelerator,
            use_vllm=False,
            use_transformers_continuous_batching=False,
            _is_vlm=False,
            args=SimpleNamespace(generation_kwargs=None),
            top_k=0,
            min_p=None,
            repetition_penalty=1.0,
        )

    kinds = (DistributedType.NO, DistributedType.MULTI_CPU, DistributedType.MULTI_GPU)
    assert all(data_parallel(trainer(kind).accelerator) for kind in kinds)
    assert not data_parallel(trainer(DistributedType.FSDP).accelerator)
    assert all(unsupported(trainer(kind)) is None for kind in (*kinds, DistributedType.FSDP))
    assert "DEEPSPEED" in unsupported(trainer(DistributedType.DEEPSPEED))
    assert unsupported(trainer(DistributedType.DEEPSPEED, processes=1)) is None


@pytest.mark.slow
def test_fsdp2_ranks_sample_in_step_and_draw_what_whole_weights_draw(model_dir, rlvr_cache, tmp_path):
    """Two real FSDP2 processes (gloo) sample single turns and tool-style episodes with
    different prompts and budgets, so they need different numbers of forwards: each draws
    exactly what an unsharded copy draws from the same seed, and the rank with fewer forwards
    makes up the difference with stand-ins (a missing one would hang the gathers)."""
    from test_gpu_configs import free_port
    from test_multiprocess import launch_env

    from tests.support.two_ranks import run_two_ranks

    done = run_two_ranks(
        "tests.support.sampling_two_ranks",
        [str(model_dir), str(tmp_path)],
        launch_env(rlvr_cache),
        free_port(),
        fsdp=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    ranks = torch.load(tmp_path / "result.pt", weights_only=False)
    assert all(r["distributed_type"] == "DistributedType.FSDP" for r in ranks)
    for kind in ("single_turns", "episodes"):
        for r in ranks:
            assert r[kind]["drawn"] == r[kind]["whole"], kind
        counts = [r[kind]["forwards"] + r[kind]["stand_ins"] for r in ranks]
        assert counts[0] == counts[1], (kind, counts)
        stand_ins = sorted(r[kind]["stand_ins"] for r in ranks)
        assert stand_ins[0] == 0 and stand_ins[1] > 0, (kind, stand_ins)  # the last rank: none
    answered = [ids for r in ranks for ids in r["episodes"]["drawn"] if "20, 21, 22" in str(ids)]
    assert answered  # some episode's tool answer was fed on top of its cache


def test_prompts_group_by_content_and_unequal_repeats_are_drawn_alone():
    distinct, samples_of = group_prompts([[1, 2], [3], [1, 2], [3]])
    assert distinct == [[1, 2], [3]] and samples_of == [(0, 0), (1, 0), (0, 1), (1, 1)]
    distinct, samples_of = group_prompts([[1, 2], [3], [1, 2]])
    assert distinct == [[1, 2], [3]] and samples_of is None
    assert group_prompts([]) == ([], None)
