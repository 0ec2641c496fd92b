"""Agent rows in GRPO: micro-suite rows, the tiny template's tools, TRL parsing, reward glue."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from rlvr.data.agent import rollout_text, score_rollouts, sft_examples, trainer_kwargs, training_row
from rlvr.models import tiny as tiny_model
from rlvr.rewards.scoring import sequential_scorer
from tasks import micro
from tasks.environments import (
    NoToolsEnvironment,
    WorkplaceEnvironment,
    call_tool,
    get_environment_class,
    tool_names,
)
from tasks.micro.agent import CLOSING, LEVELS, tool_listing, tool_turns
from tasks.schema import make_row, reference_of
from verifiers import ReasoningFormat, Status, verify

GATED = ReasoningFormat(strip_think=True, format_gate=True)


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_model.build_tokenizer()


def environment_tools(environment: str = "workplace") -> list[Any]:
    env_class = get_environment_class(environment)
    env = env_class()
    return [getattr(env, name) for name in tool_names(env_class)]


def agent_rows(n: int = 8, seed: int = 0, split: str = "train") -> list[dict[str, Any]]:
    return micro.generate("agent", n, seed=seed, split=split)


def math_row(answer: str = "2") -> dict[str, Any]:
    return make_row(
        prompt=[{"role": "user", "content": "Compute 1+1."}],
        domain="math",
        verifier="math",
        reference={"answer": answer},
        source="t",
        id="m0",
    )


# -- micro-suite agent rows --


@pytest.mark.parametrize("level", LEVELS)
def test_train_and_heldout_never_share_prompt_or_id(level: int) -> None:
    train = [r for s in range(3) for r in micro.generate("agent", 60, s, level, "train")]
    held = [r for s in range(3) for r in micro.generate("agent", 30, s, level, "heldout")]
    base = lambda r: re.sub(r"-r\d+$", "", r["id"])  # noqa: E731
    user = lambda r: r["prompt"][-1]["content"]  # noqa: E731
    assert not {base(r) for r in train} & {base(r) for r in held}
    assert not {user(r) for r in train} & {user(r) for r in held}
    assert len({r["id"] for r in held}) == len(held)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_rows_are_deterministic_canonical_and_spread_over_levels(split: str) -> None:
    rows = agent_rows(16, seed=2, split=split)
    assert rows == agent_rows(16, seed=2, split=split) != agent_rows(16, seed=3, split=split)
    levels = sorted(int(r["id"].split("-")[2][1:]) for r in rows)
    assert levels == sorted(list(LEVELS) * 4)
    for row in rows:
        level = int(row["id"].split("-")[2][1:])
        # Easy levels use the four-tool lite workplace (short prompts for the tiny model).
        expected_env = "workplace_lite" if level <= 2 else "workplace"
        assert (row["domain"], row["verifier"], row["environment"]) == (
            "agent",
            "workplace",
            expected_env,
        )
        assert row["source"] == f"micro/agent/{split}"
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["prompt"][0]["content"] == tool_listing(row["environment"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"difficulty": 9}, "unknown difficulty"), ({"split": "test"}, "unknown split")],
)
def test_bad_requests_name_the_fix(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        micro.generate("agent", 4, seed=0, **kwargs)


def _drop_last_call(demo: str) -> str:
    if demo.count("<tool_call>") > 1:
        return demo.rsplit("\n<tool_call>", 1)[0]
    return demo.split("</think>", 1)[0] + "</think>\nno call"


def _wrong_value(demo: str) -> str:
    return re.sub(r'("(?:to|title|body|query|email)":")[^"]*"', r'\1zzz"', demo)


@pytest.mark.parametrize(
    ("edit", "status"),
    [
        (lambda d: d, Status.CORRECT),
        (_drop_last_call, Status.WRONG),
        (lambda d: d.split("</think>\n", 1)[1], Status.FORMAT_ERROR),  # the gate: no </think>
        (lambda d: d.replace("}}</tool_call>", "}</tool_call>", 1), Status.FORMAT_ERROR),
    ],
)
def test_demonstrations_through_the_workplace_verifier(edit, status: Status) -> None:
    for row in agent_rows(12, seed=5) + agent_rows(4, seed=5, split="heldout"):
        completion = edit(micro.demonstration(row))
        assert verify(completion, reference_of(row), "workplace", GATED).status is status, completion


def test_wrong_argument_values_fail() -> None:
    demos = [(r, micro.demonstration(r)) for r in agent_rows(16, seed=6)]
    changed = [(r, _wrong_value(d)) for r, d in demos if _wrong_value(d) != d]
    assert len(changed) > 8
    for row, completion in changed:
        verdict = verify(completion, reference_of(row), "workplace")
        assert verdict.status is Status.WRONG, completion


def test_demonstrations_are_short() -> None:
    """About 110 tokens per call: level 1-2 rollouts fit a 192-token completion budget."""
    demos = [micro.demonstration(r) for r in agent_rows(40, seed=1)]
    for demo in demos:
        assert len(demo) <= 20 + 110 * demo.count("<tool_call>"), demo
    assert all(re.fullmatch(r"<think>[a-z_, ]{1,60}</think>\n(<tool_call>.+</tool_call>\n?)+", d) for d in demos)


# -- the tiny template and TRL's parser --


def test_row_listing_renders_like_trl_tools(tokenizer) -> None:
    """Text-only prompts (SFT, held-out) and GRPO prompts (TRL passes the tools) are the same
    tokens; and the compact listing keeps agent prompts well inside the context."""
    for row in agent_rows(8, seed=4):
        text_only = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, return_dict=False)
        with_tools = tokenizer.apply_chat_template(
            training_row(row)["prompt"],
            tools=environment_tools(row["environment"]),
            add_generation_prompt=True,
            return_dict=False,
        )
        assert text_only == with_tools
        assert len(with_tools) < 640


def test_training_row_drops_only_the_tool_listing() -> None:
    row = agent_rows(1)[0]
    assert [m["role"] for m in training_row(row)["prompt"]] == ["user"]
    custom = {**row, "prompt": [{"role": "system", "content": "Be brief."}, *row["prompt"][1:]]}
    assert training_row(custom)["prompt"] == custom["prompt"]
    assert training_row(math_row()) == math_row()


def test_trainer_kwargs_route_every_row() -> None:
    assert trainer_kwargs(["", "", None]) == {}
    factories = trainer_kwargs(["workplace", ""])["environment_factory"]
    assert set(factories) == {"workplace", ""}
    assert isinstance(factories[""](), NoToolsEnvironment)


def test_tokenizer_is_ready_for_trl_tools(tokenizer, tmp_path) -> None:
    from transformers import AutoTokenizer
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded.response_template == tiny_model.RESPONSE_TEMPLATE


def _parse(tokenizer, text: str, environment: str = "workplace") -> dict[str, Any]:
    from trl.chat_template_utils import parse_response

    prefix = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], add_generation_prompt=True, return_dict=False
    )
    ids = tokenizer.encode(text + tiny_model.IM_END, add_special_tokens=False)
    return parse_response(tokenizer, ids, prefix=prefix, tools=environment_tools(environment))


def test_trl_parses_demonstrations_into_the_gold_calls(tokenizer) -> None:
    for row in agent_rows(8, seed=7):
        message = _parse(tokenizer, micro.demonstration(row), row["environment"])
        calls = [c["function"] for c in message["tool_calls"]]
        assert calls == [{"name": c["name"], "arguments": c["arguments"]} for c in reference_of(row)["task"]["calls"]]
        text = rollout_text([message])  # reasoning and structured calls rendered back
        assert verify(text, reference_of(row), "workplace", GATED).score == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>7</think>\nAnswer: 7", "<think>7</think>\nAnswer: 7"),
        ("Answer: 7", "Answer: 7"),
        ('<tool_call>{"name": bad</tool_call>', '<tool_call>{"name": bad</tool_call>'),
    ],
)
def test_rollout_text_keeps_reasoning_and_unparsed_text(tokenizer, text: str, expected: str) -> None:
    assert rollout_text([_parse(tokenizer, text)]) == expected


# -- reward glue --


def _episode(row: dict[str, Any], calls: list[dict[str, Any]]) -> WorkplaceEnvironment:
    env = WorkplaceEnvironment()
    env.reset(**row)
    for call in calls:
        call_tool(env, call["name"], call["arguments"])
    return env


class _BrokenEnvironment:
    def _verdict(self):
        raise RuntimeError("scoring bug")


def test_score_rollouts_prefers_the_live_episode() -> None:
    row = next(r for r in agent_rows(8, seed=8) if "send_email" in r["reference"])
    gold = reference_of(row)["task"]["calls"]
    demo = micro.demonstration(row)
    scorer = sequential_scorer(ReasoningFormat())
    cases = [  # (environment, completion text, expected status)
        (_episode(row, gold), demo, Status.CORRECT),
        (_episode(row, gold), "no think, calls ran live", Status.FORMAT_ERROR),
        (_episode(row, gold[:-1]), demo, Status.WRONG),  # text is right, the episode is not
        (_episode(row, gold + gold), demo, Status.WRONG),  # an extra state change
        (NoToolsEnvironment(), demo, Status.CORRECT),  # no live episode: text replay
        (NoToolsEnvironment(), "", Status.WRONG),
        (_BrokenEnvironment(), demo, Status.ERROR),
    ]
    items = [(text, reference_of(row), "workplace") for _, text, _ in cases]
    environments = [env for env, _, _ in cases]
    verdicts = score_rollouts(items, range(len(cases)), environments, scorer, format_gate=True)
    assert [v.status for v in verdicts] == [status for _, _, status in cases]
    plain = score_rollouts(items[:2], [0, 1], environments, scorer, format_gate=False)
    assert [v.score for v in plain] == [1.0, 1.0]


def test_sft_follow_ups_match_trl_tool_loop_tokens(tokenizer) -> None:
    """A follow-up example's prompt is what TRL feeds the model after running the calls:
    prompt + the model's turn + EOS + the tool-result suffix, ending in a new assistant turn."""
    rows = agent_rows(8, seed=9)
    examples = sft_examples(rows)
    assert len(examples) == len(rows)
    follow_ups = [(r, e) for r, e in zip(rows, examples, strict=True) if len(e["prompt"]) > 2]
    assert follow_ups and len(follow_ups) < len(rows)
    for row, example in follow_ups:
        assert example["completion"] == [{"role": "assistant", "content": CLOSING}]
        turns = tool_turns(row)
        rendered = tokenizer.apply_chat_template(example["prompt"], tokenize=False, add_generation_prompt=True)
        prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        suffix = "".join(f"\n{tiny_model.IM_START}tool\n{t['content']}{tiny_model.IM_END}" for t in turns[1:])
        model_turn = turns[0]["content"] + tiny_model.IM_END
        assert rendered == prompt + model_turn + suffix + f"\n{tiny_model.IM_START}assistant\n"
        assert all(not t["content"].startswith("error") for t in turns[1:])


# -- a real GRPOTrainer on a mixed agent + math dataset --


def _scripted_agent_turns(trainer, tokenizer, rows: list[dict], wrong_id: str):
    """Real generation for math prompts; for agent prompts the demonstration (one row gets
    wrong values), then the closing turn once TRL has appended the tool results."""
    real = trainer._generate_single_turn
    demos = {}
    for row in rows:
        if row["environment"]:
            demo = micro.demonstration(row)
            demos[row["prompt"][-1]["content"]] = _wrong_value(demo) if row["id"] == wrong_id else demo

    def generate(prompt_ids, *args, **kwargs):
        texts = [tokenizer.decode(ids) for ids in prompt_ids]
        free = [i for i, t in enumerate(texts) if "Tools:" not in t]
        generated, _ = real([prompt_ids[i] for i in free], *args, **kwargs) if free else ([], None)
        out = dict(zip(free, generated, strict=True))
        for i, text in enumerate(texts):
            if i in out:
                continue
            after_user = text.rsplit(f"{tiny_model.IM_START}user\n", 1)[1]
            user = after_user.split(tiny_model.IM_END, 1)[0]
            reply = CLOSING if f"{tiny_model.IM_START}tool\n" in after_user else demos[user]
            out[i] = tokenizer.encode(reply + tiny_model.IM_END, add_special_tokens=False)
        return [out[i] for i in range(len(texts))], None

    return generate


@pytest.mark.slow
def test_mixed_agent_and_math_grpo_logs_domain_rewards(tmp_path, tokenizer) -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig

    from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
    from rlvr.training.grpo import RLVRGRPOTrainer

    agent = micro.generate("agent", 2, seed=11, difficulty=1)  # short: one call each
    rows = agent + [math_row()] + [{**math_row("3"), "id": "m1"}]
    spec = tiny_model.TinyModelSpec(hidden_size=32, num_hidden_layers=1, intermediate_size=64)
    model = tiny_model.build_model(spec, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    budget = ErrorBudget(max_rate=0.5, min_samples=1)
    rewards = build_reward_functions(
        ["agent", "math"], sequential_scorer(GATED), budget, StepTimer(), format_gate=True
    )
    seen: list[tuple[str, str, float | None]] = []

    def observed(fn):
        def reward(prompts, completions, **kwargs):
            out = fn(prompts, completions, **kwargs)
            seen.extend((fn.__name__, i, r) for i, r in zip(kwargs["id"], out, strict=True))
            return out

        reward.__name__ = fn.__name__
        return reward

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=2,
        max_steps=2,
        max_completion_length=128,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        remove_unused_columns=False,
        learning_rate=1e-4,
    )
    dataset = Dataset.from_list([training_row(r) for r in rows])
    trainer = RLVRGRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[observed(f) for f in rewards],
        args=args,
        train_dataset=dataset,
        **trainer_kwargs(dataset["environment"]),
    )
    trainer._generate_single_turn = _scripted_agent_turns(trainer, tokenizer, rows, agent[1]["id"])
    trainer.train()

    logs = [entry for entry in trainer.state.log_history if "rewards/reward_agent/mean" in entry]
    assert len(logs) == 2 and all("rewards/reward_math/mean" in entry for entry in logs)
    assert all(float(entry["tools/call_frequency"]) > 0 for entry in logs)  # TRL ran the calls
    scores: dict[tuple[str, str], set] = {}
    for name, row_id, reward in seen:
        scores.setdefault((name, row_id), set()).add(reward)
    agent_ids, math_ids = [r["id"] for r in agent], ["m0", "m1"]
    assert scores[("reward_agent", agent_ids[0])] == {1.0}  # right calls, run live in TRL
    assert scores[("reward_agent", agent_ids[1])] == {0.0}  # wrong values
    assert all(scores[("reward_math", i)] == {None} for i in agent_ids)
    assert all(scores[("reward_agent", i)] == {None} for i in math_ids)
    assert all(None not in scores[("reward_math", i)] for i in math_ids)
    assert sum(budget.errors.values()) == 0
