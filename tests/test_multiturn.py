"""Batched multi-turn sampling with KV caches kept across turns (rlvr.evaluation.multiturn)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlvr.evaluation.episodes import episode_tokenizer, start_episode, tool_suffix_ids
from rlvr.evaluation.multiturn import TurnSampling, sample_episodes
from rlvr.models import tiny as tiny_model
from tasks import micro

BUDGET = 96


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    """The tiny model with larger random weights: its greedy turns vary (the initialised one
    repeats one token), so every cached id is checked against a different prediction."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return model


@pytest.fixture(scope="module")
def tokenizer():
    return episode_tokenizer(tiny_model.build_tokenizer())


@pytest.fixture(scope="module")
def prompts(tokenizer) -> list[list[int]]:
    """Agent prompts of different lengths, one of them twice (shared prefill)."""
    rows = micro.generate("agent", 5, seed=3, difficulty=[1, 2], split="heldout")
    ids = [start_episode(tokenizer, row).prompt_ids for row in rows]
    return [*ids, ids[0], ids[2][:-7]]


class Tools:
    """Answers the first turns of each episode with a real tool-result suffix whose length
    differs per episode and turn, then ends it; records what it appended."""

    def __init__(self, tokenizer: Any, budget: int, turns: int = 3) -> None:
        self.tokenizer, self.budget, self.turns = tokenizer, budget, turns
        self.seen: dict[int, list[list[int]]] = {}
        self.suffixes: dict[int, list[list[int]]] = {}
        self.used: dict[int, int] = {}

    def __call__(self, ended: list[tuple[int, list[int]]]) -> list[list[int] | None]:
        out = []
        for i, turn in ended:
            self.seen.setdefault(i, []).append(turn)
            self.used[i] = self.used.get(i, 0) + len(turn)
            content = "ok " * (1 + (3 * i + len(self.seen[i])) % 5)
            message = {"role": "tool", "name": "email", "content": content}
            suffix = tool_suffix_ids(self.tokenizer, [message])
            if len(self.seen[i]) > self.turns or self.used[i] + len(suffix) > self.budget:
                out.append(None)  # as the real handlers do: results that overflow are dropped
                continue
            self.used[i] += len(suffix)
            self.suffixes.setdefault(i, []).append(suffix)
            out.append(suffix)
        return out


def short_turns(tokenizer: Any, **kwargs: Any) -> TurnSampling:
    """Turns end at any id divisible by 7, so episodes have several turns within the budget."""
    ends = tuple(range(0, len(tokenizer), 7))
    return TurnSampling(budget=BUDGET, eos_token_ids=ends, pad_token_id=0, **kwargs)


@pytest.mark.parametrize("share", [True, False], ids=["shared-prompts", "prompt-per-row"])
def test_cached_turns_equal_reencoding_the_conversation_under_greedy(model, tokenizer, prompts, share) -> None:
    """Every model id is the greedy prediction of a full forward over the conversation so
    far; suffixes sit where the handler put them, masked 0; the budget holds. With prompts
    held once each (the default) and with a copy per row."""
    tools = Tools(tokenizer, BUDGET)
    # episodes queue and join: prompts enter and leave the shared cache
    sampling = short_turns(tokenizer, greedy=True, batch_size=3, share_prompts=share)
    traces = sample_episodes(model, prompts, tools, sampling)
    assert sum(len(s) for s in tools.suffixes.values()) >= 2 * len(prompts)  # many feeds
    for i, trace in enumerate(traces):
        assert trace.prompt_ids == prompts[i]
        assert len(trace.completion_ids) <= BUDGET
        assert len(trace.mask) == len(trace.completion_ids)
        with torch.no_grad():
            logits = model(torch.tensor([trace.ids])).logits[0]
        start = len(trace.prompt_ids)
        for k, (token, model_made) in enumerate(zip(trace.completion_ids, trace.mask, strict=True)):
            if model_made:
                row = logits[start + k - 1]
                assert row[token] >= row.max() - 1e-4, (i, k)  # argmax up to float noise
        rebuilt, position, suffixes = [], 0, tools.suffixes.get(i, [])
        for n, turn in enumerate(tools.seen[i]):
            suffix = suffixes[n] if n < len(suffixes) else []
            rebuilt += [1] * len(turn) + [0] * len(suffix)
            assert trace.completion_ids[position : position + len(turn)] == turn
            position += len(turn)
            assert trace.completion_ids[position : position + len(suffix)] == suffix
            position += len(suffix)
        assert trace.mask == rebuilt[: len(trace.mask)]


def test_identical_prompts_decode_identically(model, tokenizer, prompts) -> None:
    """The two copies of one prompt share a prefill and, greedy, give the same episode."""
    traces = sample_episodes(
        model, prompts, Tools(tokenizer, BUDGET), short_turns(tokenizer, greedy=True, batch_size=8)
    )
    assert traces[0].completion_ids == traces[5].completion_ids
    alone = sample_episodes(model, prompts[:1], Tools(tokenizer, BUDGET), short_turns(tokenizer, greedy=True))
    assert alone[0].completion_ids == traces[0].completion_ids  # batching changes nothing


def test_sampling_is_seeded_and_stops_at_the_budget(model, tokenizer, prompts) -> None:
    def run(seed: int) -> list[list[int]]:
        generator = torch.Generator().manual_seed(seed)
        sampling = TurnSampling(budget=40, eos_token_ids=(tokenizer.eos_token_id,), pad_token_id=0)
        traces = sample_episodes(model, prompts, Tools(tokenizer, 40), sampling, generator)
        return [t.completion_ids for t in traces]

    first = run(1)
    assert first == run(1)
    assert first != run(2)
    assert all(len(ids) <= 40 for ids in first)
    assert any(len(ids) == 40 for ids in first)  # an episode that never ends stops at 40


def test_shared_prompts_draw_what_a_copy_per_row_draws(model, tokenizer, prompts) -> None:
    """Sampled episodes (k = 3 per prompt, several turns, rows queueing) come out the same
    with each prompt cached once and with a copy per row: the two differ in rounding only."""
    from rlvr.evaluation import shared_prefix

    assert shared_prefix.can_share(model)

    def run(share: bool) -> list[list[int]]:
        sampling = short_turns(tokenizer, batch_size=8, share_prompts=share)
        repeated = [p for p in prompts for _ in range(3)]
        generator = torch.Generator().manual_seed(5)
        traces = sample_episodes(model, repeated, Tools(tokenizer, BUDGET), sampling, generator)
        return [t.completion_ids for t in traces]

    shared = run(True)
    assert shared == run(False)
    assert len({len(ids) for ids in shared}) > 3  # episodes of many lengths and turns
    assert model.config._attn_implementation == "sdpa"
