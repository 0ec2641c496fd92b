"""The workplace environment inside TRL's GRPOTrainer: routing, tool loop and episode rewards.

Only the policy is scripted (it emits the gold tool calls as text); TRL's real parsing,
tool dispatch, environment pool and reward plumbing run unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import trl

import rlvr.models.tiny as tiny
from tasks.environments import environment_factories, environment_rewards, generate_workplace_tasks
from tasks.schema import make_row, reference_of
from verifiers.tool_call_parsing import render_tool_calls

pytestmark = pytest.mark.slow


def _scripted_policy(tokenizer: Any, rows: list[dict[str, Any]], wrong_ids: set[str]):
    """Stands in for ``_generate_single_turn``: the gold calls first, then a closing word."""
    turns = {}
    for row in rows:
        calls = reference_of(row).get("task", {}).get("calls", [])
        if row["id"] in wrong_ids:  # the last call gets wrong string values
            last = calls[-1]["arguments"]
            calls = [
                *calls[:-1],
                {
                    **calls[-1],
                    "arguments": {k: "wrong" if isinstance(v, str) else v for k, v in last.items()},
                },
            ]
        turns[row["prompt"][-1]["content"]] = render_tool_calls(calls) if calls else "2"

    def generate(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> tuple[list[list[int]], None]:
        texts = []
        for ids in prompt_ids:
            prompt = tokenizer.decode(ids)
            user = prompt.rsplit("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
            after_user = prompt.rsplit("<|im_start|>user\n", 1)[1]
            texts.append(("ok" if "</tool_call>" in after_user else turns[user]) + "<|im_end|>")
        return [tokenizer.encode(t, add_special_tokens=False) for t in texts], None

    return generate


def test_grpo_step_with_workplace_and_tool_free_rows(tmp_path: Any) -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl.chat_template_utils import qwen3_template

    tokenizer = tiny.build_tokenizer()
    # the tiny template renders Hermes <tool_call> blocks; TRL needs to be told how to parse them
    tokenizer.response_template = qwen3_template
    spec = tiny.TinyModelSpec(hidden_size=32, num_hidden_layers=1, intermediate_size=64, max_position_embeddings=8192)
    model = tiny.build_model(spec, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    agent = generate_workplace_tasks(1, seed=0, difficulty=1) + generate_workplace_tasks(1, seed=0, difficulty=2)
    math = [
        make_row(
            prompt=[{"role": "user", "content": "1+1?"}],
            domain="math",
            verifier="math",
            reference={"answer": "2"},
            source="t",
            id="m0",
        ),
    ]
    rows = agent + math
    seen: list[tuple[str, float | None]] = []

    def reward_agent(completions: list, environments: list, id: list[str], **kwargs: Any) -> list[float | None]:
        rewards = environment_rewards(environments)
        seen.extend(zip(id, rewards, strict=True))
        return rewards

    from datasets import Dataset

    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=6,
        num_generations=2,
        max_steps=1,
        max_completion_length=256,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[reward_agent],
        args=args,
        train_dataset=Dataset.from_list(rows),
        environment_factory=environment_factories(["workplace"]),
    )
    trainer._generate_single_turn = _scripted_policy(tokenizer, rows, wrong_ids={agent[1]["id"]})
    trainer.train()

    by_id: dict[str, set[float | None]] = {}
    for row_id, reward in seen:
        by_id.setdefault(row_id, set()).add(reward)
    assert by_id == {agent[0]["id"]: {1.0}, agent[1]["id"]: {0.0}, "m0": {None}}
    logged = trainer.state.log_history[0]
    assert float(logged["tools/call_frequency"]) > 0  # TRL parsed and ran the calls
