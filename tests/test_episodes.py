"""Multi-turn tool episodes for evaluation: TRL's tool loop with transformers generation."""

from __future__ import annotations

from typing import Any

import pytest

from rlvr.evaluation.episodes import (
    _advance,
    episode_tokenizer,
    run_episodes,
    start_episode,
    tool_suffix_ids,
)
from rlvr.evaluation.generation import Decoding
from rlvr.models import tiny as tiny_model
from tasks import micro
from tasks.environments import episode_verdict
from tasks.micro.agent import CLOSING, tool_turns
from tasks.schema import reference_of
from verifiers import Status


@pytest.fixture(scope="module")
def tokenizer():
    return episode_tokenizer(tiny_model.build_tokenizer())


def agent_rows(n: int, seed: int, difficulty: Any = 1) -> list[dict[str, Any]]:
    return micro.generate("agent", n, seed=seed, difficulty=difficulty, split="heldout")


def turn_ids(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text + tiny_model.IM_END, add_special_tokens=False)


def test_prompt_renders_tools_like_the_text_listing(tokenizer) -> None:
    """Episodes render tools through the template; that is the prompt SFT and replay saw."""
    for row in agent_rows(4, seed=1, difficulty=[1, 3]):
        episode = start_episode(tokenizer, row)
        listed = tokenizer.apply_chat_template(
            row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        assert episode.prompt_ids == list(listed)


def test_gold_turns_run_the_tools_and_score_correct(tokenizer) -> None:
    """The demonstration turn, the tool results TRL would append, the closing turn."""
    for row in agent_rows(6, seed=2):
        episode = start_episode(tokenizer, row)
        _advance(tokenizer, episode, turn_ids(tokenizer, micro.demonstration(row)), 400, 4096)
        assert not episode.finished and episode.tool_turns == 1
        results = tool_turns(row)[1:]  # the tool messages SFT follow-ups are built from
        assert [m["content"] for m in episode.messages[1:]] == [m["content"] for m in results]
        _advance(tokenizer, episode, turn_ids(tokenizer, CLOSING), 400, 4096)
        assert episode.finished
        assert episode_verdict(episode.environment).status is Status.CORRECT


def test_wrong_arguments_score_wrong_and_malformed_calls_end_the_episode(tokenizer) -> None:
    row = next(r for r in agent_rows(16, seed=3) if [c["name"] for c in reference_of(r)["task"]["calls"]] == ["email"])
    wrong = micro.demonstration(row).replace('"to":"', '"to":"x', 1)
    episode = start_episode(tokenizer, row)
    _advance(tokenizer, episode, turn_ids(tokenizer, wrong), 400, 4096)
    assert "error" in episode.messages[-1]["content"]  # unknown contact: an observation
    _advance(tokenizer, episode, turn_ids(tokenizer, CLOSING), 400, 4096)
    assert episode_verdict(episode.environment).status is Status.WRONG

    broken = start_episode(tokenizer, row)
    _advance(tokenizer, broken, turn_ids(tokenizer, '<tool_call>{"name": </tool_call>'), 400, 4096)
    assert broken.finished and broken.tool_turns == 0
    assert episode_verdict(broken.environment).status is Status.WRONG


def test_tool_results_that_overflow_the_budget_end_the_episode(tokenizer) -> None:
    row = agent_rows(1, seed=4)[0]
    turn = turn_ids(tokenizer, micro.demonstration(row))
    episode = start_episode(tokenizer, row)
    _advance(tokenizer, episode, turn, len(turn) + 3, 4096)
    assert episode.finished and episode.completion_ids == turn  # the results were not appended
    assert len(episode.messages) == 1


def test_suffix_is_what_the_template_renders_after_a_tool_call(tokenizer) -> None:
    row = agent_rows(1, seed=5)[0]
    turns = tool_turns(row)
    suffix = tokenizer.decode(tool_suffix_ids(tokenizer, turns[1:]))
    expected = "".join(f"\n{tiny_model.IM_START}tool\n{t['content']}{tiny_model.IM_END}" for t in turns[1:])
    assert suffix == expected + f"\n{tiny_model.IM_START}assistant\n"


def test_run_episodes_with_a_real_model(tiny_model_dir) -> None:
    """k scored episodes per row (one when greedy), identical for the same seed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = agent_rows(3, seed=6)
    sampled = Decoding(k=2, max_new_tokens=24)
    first = run_episodes(model, tok, rows, sampled, batch_size=4, seed=3)
    again = run_episodes(model, tok, rows, sampled, batch_size=4, seed=3)
    assert [len(r) for r in first] == [2, 2, 2]
    assert [[e.text for e in r] for r in first] == [[e.text for e in r] for r in again]
    assert all(e.verdict.status in Status for r in first for e in r)
    assert all(0 < e.tokens <= 24 for r in first for e in r)
    greedy = run_episodes(model, tok, rows, Decoding(greedy=True, max_new_tokens=24))
    assert [len(r) for r in greedy] == [1, 1, 1]
    assert reference_of(rows[0])["environment"] == "workplace_lite"


def assert_matches_the_reencoding_loop(model_dir, rows, batch_size: int) -> list:
    """Greedy, the KV-cached loop gives the re-encoding loop's episodes: texts (turns and tool
    results), verdicts and token counts."""
    from script_loader import load_script
    from transformers import AutoModelForCausalLM, AutoTokenizer

    legacy = load_script("bench_episodes").legacy_run_episodes
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    greedy = Decoding(greedy=True, max_new_tokens=160)
    new = run_episodes(model, tok, rows, greedy, batch_size=batch_size)
    old = legacy(model, tok, rows, greedy, batch_size=batch_size)
    assert [[(e.text, e.verdict, e.tokens) for e in r] for r in new] == [
        [(e.text, e.verdict, e.tokens) for e in r] for r in old
    ]
    return [e for r in new for e in r]


def test_greedy_episodes_match_the_reencoding_loop(tiny_model_dir) -> None:
    assert_matches_the_reencoding_loop(tiny_model_dir, agent_rows(3, seed=7), batch_size=2)


@pytest.mark.slow
def test_tool_calling_episodes_match_the_reencoding_loop(agent_sft_checkpoint) -> None:
    """A model that calls tools: several turns with results appended, live verdicts."""
    episodes = assert_matches_the_reencoding_loop(agent_sft_checkpoint, agent_rows(12, seed=8), batch_size=5)
    called = [e for e in episodes if "</tool_call>\n" in e.text]
    assert len(called) >= len(episodes) // 2
    assert all(e.text.split("</tool_call>\n", 1)[1] for e in called)  # results, then a turn
