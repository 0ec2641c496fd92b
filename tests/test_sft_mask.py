"""SFT trains what the model generates: on Qwen3's vocabulary and chat template, TRL's own
tokenization of a ``messages`` conversation gives loss to the assistant's words, tool calls and
turn ends only (system, user and tool turns carry none), through Qwen3's template with
generation marks that renders exactly Qwen3's text; prompt/completion data keeps the
completion-only loss; a template that cannot be marked fails before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import ConfigError
from rlvr.models.generation_marks import has_generation_marks, marked_template
from rlvr.models.template_checks import (
    ANSWERS,
    CALL,
    SYSTEM,
    TOOL_RESULT,
    TOOLS,
    USERS,
    option_sets,
    probe_chats,
)
from rlvr.training.sft import loss_options, with_template_options

IM_END = 151645
CALL_TEXT = '"arguments": {"word": "probe"}'  # the call as the assistant writes it


@pytest.fixture(scope="module")
def tokenizer(qwen3_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(qwen3_dir)


def test_marked_qwen3_template_renders_qwens_text_where_trls_does_not(tokenizer):
    from trl.chat_template_utils import get_training_chat_template

    own = tokenizer.chat_template
    assert not has_generation_marks(own)
    marked = marked_template(tokenizer)
    assert has_generation_marks(marked)
    trl_training = get_training_chat_template(tokenizer)
    trl_differs = False
    for messages, tools in probe_chats():
        for options in option_sets({}):
            for prompt in (False, True):
                kwargs = {"tools": tools, "add_generation_prompt": prompt, **options}
                text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
                assert text == tokenizer.apply_chat_template(messages, tokenize=False, chat_template=marked, **kwargs)
                trl_differs |= text != tokenizer.apply_chat_template(
                    messages, tokenize=False, chat_template=trl_training, **kwargs
                )
    assert trl_differs  # TRL's training variant renders a think block in every turn


def conversations() -> list[dict]:
    """A multi-turn chat with a system turn, and a tool-calling one (TRL's ``tools`` column)."""
    system, first, again = (
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USERS[0]},
        {"role": "user", "content": USERS[1]},
    )
    call = {**CALL, "function": {**CALL["function"], "arguments": json.dumps({"word": "probe"})}}
    return [
        {
            "messages": [
                system,
                first,
                {"role": "assistant", "content": ANSWERS[0]},
                again,
                {"role": "assistant", "content": ANSWERS[1]},
            ],
            "tools": None,
        },
        {
            "messages": [
                system,
                first,
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "name": "lookup", "content": TOOL_RESULT},
                {"role": "assistant", "content": ANSWERS[1]},
            ],
            "tools": json.dumps(TOOLS),
        },
    ]


def trl_rows(model_dir: Path, tokenizer, data, out: Path):
    """The dataset as TRL's SFTTrainer tokenizes it with run_sft's loss options and template."""
    from trl import SFTConfig, SFTTrainer

    own = tokenizer.chat_template
    tokenizer.chat_template = marked_template(tokenizer)
    try:
        args = SFTConfig(output_dir=str(out), report_to=[], use_cpu=True, **loss_options(data))
        trainer = SFTTrainer(model=str(model_dir), args=args, train_dataset=data, processing_class=tokenizer)
    finally:
        tokenizer.chat_template = own
    return trainer.train_dataset


@pytest.mark.parametrize("thinking", [None, False])
def test_trl_trains_assistant_turns_and_their_ends_only(qwen3_dir, tokenizer, thinking, tmp_path):
    from datasets import Dataset

    options = {} if thinking is None else {"enable_thinking": thinking}
    data = with_template_options(Dataset.from_list(conversations()), options)
    rows = trl_rows(qwen3_dir, tokenizer, data, tmp_path)
    for example, ids, labels in zip(conversations(), rows["input_ids"], rows["labels"], strict=True):
        tools = json.loads(example["tools"]) if example["tools"] else None
        text = tokenizer.apply_chat_template(example["messages"], tools=tools, tokenize=False, **options)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        assert enc["input_ids"] == ids
        trained = [label != -100 for label in labels]
        assert [label for label in labels if label != -100] == [i for i, t in zip(ids, trained, strict=True) if t]
        for probe, want in [
            (SYSTEM, False),
            (USERS[0], False),
            (TOOL_RESULT, False),
            (ANSWERS[1], True),
            (CALL_TEXT, True),
        ]:
            if probe not in text:  # the tool turn and call: the second chat only
                assert example["tools"] is None and probe in (TOOL_RESULT, CALL_TEXT)
                continue
            covered = tokens_within(text, probe, enc["offset_mapping"])
            assert covered and all(trained[i] == want for i in covered), (probe, want)
        ends = [i for i, t in enumerate(ids) if t == IM_END]
        assistant_ends = [i for i in ends if trained[i - 1]]  # closes trained assistant words
        turns = sum(m["role"] == "assistant" for m in example["messages"])
        assert len(assistant_ends) == turns
        assert all(trained[i] for i in assistant_ends)
        assert not any(trained[i] for i in ends if i not in assistant_ends)
        assert not trained[ids.index(151644)]  # the role headers carry no loss


def tokens_within(text: str, probe: str, offsets) -> list[int]:
    """Indices of the tokens inside every occurrence of ``probe`` in ``text``."""
    spans = []
    start = text.find(probe)
    while start >= 0:
        spans.append((start, start + len(probe)))
        start = text.find(probe, start + 1)
    return [i for i, (a, b) in enumerate(offsets) if any(s <= a and b <= e for s, e in spans)]


def test_prompt_completion_data_keeps_the_completion_only_loss():
    from datasets import Dataset

    demo = {
        "prompt": [{"role": "user", "content": "1+1?"}],
        "completion": [{"role": "assistant", "content": "2"}],
    }
    assert loss_options(Dataset.from_list([demo])) == {"completion_only_loss": True}
    with pytest.raises(ConfigError, match="'messages' column"):
        loss_options(Dataset.from_list([{"text": "plain"}]))


def test_a_template_that_cannot_be_marked_fails_naming_the_fix(tokenizer):
    llama_like = (
        "{% for m in messages %}{{ '<|start|>' + m['role'] + '\\n' + m['content'] + '<|end|>' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|start|>assistant\\n' }}{% endif %}"
    )
    tokenizer = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    tokenizer.chat_template = llama_like
    with pytest.raises(ConfigError, match=r"\{% generation %\}"):
        marked_template(tokenizer)
