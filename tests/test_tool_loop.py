"""GRPO agent rollouts as KV-cached episodes (rlvr.rollouts.tool_loop) against TRL's own tool loop."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from rlvr.data.agent import prepare_tokenizer, trainer_kwargs, training_row
from rlvr.models import tiny as tiny_model
from tasks import micro


def build_trainer(model_dir, tmp_path, tool_episodes: bool, **overrides: Any):
    """An RLVRGRPOTrainer on agent rows with live environments; near-greedy sampling (both
    paths then draw the argmax), so the two tool loops must agree token for token."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from rlvr.training.grpo import RLVRGRPOTrainer

    rows = micro.generate("agent", 4, seed=5, difficulty=1, split="heldout")
    dataset = Dataset.from_list([training_row(r) for r in rows])
    settings = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=2,
        max_completion_length=160,
        temperature=1e-4,
        top_k=0,
        beta=0.0,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        remove_unused_columns=False,
        seed=0,
    )
    settings.update(overrides)
    trainer = RLVRGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        processing_class=prepare_tokenizer(tiny_model.build_tokenizer()),
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=GRPOConfig(**settings),
        train_dataset=dataset,
        tool_episodes=tool_episodes,
        kv_sampling=tool_episodes,  # the other side is TRL's loop and generate throughout
        **trainer_kwargs(dataset["environment"]),
    )
    inputs = [dict(training_row(r)) for r in rows for _ in range(2)]
    return trainer, inputs


def generate(trainer, inputs) -> tuple[dict[str, Any], tuple, dict[str, list]]:
    """One generation batch: the trainer's outputs, ``_generate``'s return, tool metrics."""
    seen: list[tuple] = []
    plain = trainer._generate

    def recorded(prompts):
        seen.append(plain(prompts))
        return seen[-1]

    trainer._generate = recorded  # observes; the trainer's own method runs
    with torch.no_grad():
        output = trainer._generate_and_score_completions(inputs)
    metrics = {k: list(v) for k, v in trainer._metrics["train"].items() if k.startswith("tools/")}
    return output, seen[0], metrics


def assert_same_rollouts(model_dir, tmp_path, expect_calls: bool, **overrides: Any) -> list:
    from rlvr.rollouts.tool_loop import unsupported

    ours, ours_inputs = build_trainer(model_dir, tmp_path / "a", True, **overrides)
    trl, trl_inputs = build_trainer(model_dir, tmp_path / "b", False, **overrides)
    out_a, gen_a, tools_a = generate(ours, ours_inputs)
    assert unsupported(ours) is None and ours._runs_episodes() and not trl._runs_episodes()
    out_b, gen_b, tools_b = generate(trl, trl_inputs)
    for key in ("prompt_ids", "completion_ids", "completion_mask", "tool_mask"):
        assert torch.equal(out_a[key], out_b[key]), key
    _, ids_a, mask_a, messages_a, logprobs_a, *_ = gen_a
    _, ids_b, mask_b, messages_b, logprobs_b, *_ = gen_b
    assert ids_a == ids_b and mask_a == mask_b
    assert messages_a == messages_b  # parsed turns and tool messages, in order
    assert logprobs_a is None and logprobs_b is None
    assert tools_a == tools_b  # call and failure frequencies
    calls = sum(m["role"] == "tool" for ms in messages_a for m in ms)
    assert (calls > 0) == expect_calls
    assert all(len(ids) <= overrides.get("max_completion_length", 160) for ids in ids_a)
    return messages_a


def test_untrained_model_rollouts_match_trls_loop(tiny_model_dir, tmp_path) -> None:
    """Without tool calls: the first turn, from the cache path and from ``generate``."""
    assert_same_rollouts(tiny_model_dir, tmp_path, expect_calls=False)


@pytest.mark.slow
def test_tool_calling_rollouts_match_trls_loop(agent_sft_checkpoint, tmp_path) -> None:
    """A model that calls tools: turns, tool results, masks and counts as TRL's loop has them."""
    assert_same_rollouts(agent_sft_checkpoint, tmp_path, expect_calls=True)


@pytest.mark.slow
def test_tool_results_that_overflow_are_dropped_as_in_trl(agent_sft_checkpoint, tmp_path):
    """A budget the tool results do not fit in: both loops end the rollout on its call turn."""
    messages = assert_same_rollouts(agent_sft_checkpoint, tmp_path, expect_calls=False, max_completion_length=80)
    assert any(m.get("tool_calls") for ms in messages for m in ms)  # called, results dropped


def test_other_sampling_settings_keep_trls_loop(tiny_model_dir, tmp_path) -> None:
    from rlvr.rollouts.tool_loop import unsupported

    trainer, _ = build_trainer(tiny_model_dir, tmp_path, True, top_k=5)
    trainer._async_tool_dicts = []
    assert unsupported(trainer) == "sampling settings beyond temperature and top-p"
    trainer, _ = build_trainer(tiny_model_dir, tmp_path, True)
    trainer._async_tool_dicts = []
    assert unsupported(trainer) is None
