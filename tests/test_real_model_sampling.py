"""rlvr's KV-cache samplers on a real architecture (SmolLM2-135M-Instruct: Llama, grouped-query
attention 9/3, tied embeddings, BPE, ChatML with <|im_end|>) against ``model.generate``, token
for token under greedy decoding, for prompts of mixed lengths: evaluation sampling, GRPO's
single-turn rollouts and multi-turn tool episodes. Sampled log-probs equal a full forward's."""

from __future__ import annotations

import os

import pytest
import torch

from rlvr.evaluation.generation import Decoding, sampler_for
from rlvr.evaluation.sampling import sample_tokens
from rlvr.models.chat_format import ChatFormat, stop_token_ids

# Mixed lengths, and answers short enough that some end at <|im_end|> inside the limit
PROMPTS = [
    [{"role": "user", "content": "Hi!"}],
    [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}],
    [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "List three colours of the rainbow, separated by commas."},
    ],
    [{"role": "user", "content": "Translate 'good morning' into French. Only the translation."}],
    [{"role": "user", "content": "Write a haiku about autumn leaves falling on a quiet river."}],
]
NEW = 24
LOGPROB_TOLERANCE = 2e-4  # float32, KV cache vs one full forward over 30 layers


@pytest.fixture(scope="module")
def smollm2(smollm2_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smollm2_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    tokenizer.padding_side = "left"
    return model, tokenizer


def generate_greedy(model, ids: list[int], new: int, stops) -> list[int]:
    """``model.generate`` on one unpadded prompt, cut after its first end token."""
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            do_sample=False,
            max_new_tokens=new,
            eos_token_id=list(stops),
            pad_token_id=stops[0],
        )[0, len(ids) :].tolist()
    end = next((i for i, t in enumerate(out) if t in stops), None)
    return out if end is None else out[: end + 1]


def test_evaluation_sampler_equals_generate_greedy_on_a_mixed_batch(smollm2):
    model, tokenizer = smollm2
    ids = [ChatFormat().ids(tokenizer, p) for p in PROMPTS]
    assert len({len(i) for i in ids}) >= 4  # lengths differ: left padding is real
    sampler = sampler_for(tokenizer, model, Decoding(greedy=True, max_new_tokens=NEW))
    got = sample_tokens(model, ids, sampler, k=1).ids
    stops = stop_token_ids(tokenizer, model.generation_config)
    want = [generate_greedy(model, p, NEW, stops) for p in ids]
    assert [g[0] for g in got] == want  # the end token kept, as TRL keeps it
    assert any(w[-1] in stops for w in want) and any(len(w) == NEW for w in want)


def test_sampled_logprobs_equal_a_full_forward(smollm2):
    model, tokenizer = smollm2
    ids = [ChatFormat().ids(tokenizer, p) for p in PROMPTS[:3]]
    sampler = sampler_for(tokenizer, model, Decoding(temperature=0.8, max_new_tokens=12))
    out = sample_tokens(model, ids, sampler, k=2, generator=torch.Generator().manual_seed(0), logprobs=True)
    assert out.logprobs is not None
    for prompt, completions, logps in zip(ids, out.ids, out.logprobs, strict=True):
        for completion, lp in zip(completions, logps, strict=True):
            with torch.no_grad():
                logits = model(torch.tensor([prompt + completion])).logits[0].float()
            want = torch.log_softmax(logits[len(prompt) - 1 : -1] / 0.8, -1)
            want = want.gather(1, torch.tensor(completion)[:, None]).squeeze(1)
            assert torch.allclose(torch.tensor(lp), want, atol=LOGPROB_TOLERANCE)


def test_grpo_single_turn_rollouts_equal_trls_generate(smollm2_dir, smollm2, tmp_path):
    """GRPO's KV-cache rollouts against TRL's own generate path, both at (near) argmax."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig

    from rlvr.training.grpo import RLVRGRPOTrainer

    model, tokenizer = smollm2

    def trainer(kv: bool, out: str):
        args = GRPOConfig(
            output_dir=str(tmp_path / out),
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=NEW,
            temperature=1e-4,
            top_k=0,
            beta=0.0,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            seed=0,
        )
        return RLVRGRPOTrainer(
            model=model,
            processing_class=tokenizer,
            args=args,
            kv_sampling=kv,
            reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
            train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]),
        )

    ours, trl = trainer(True, "kv"), trainer(False, "generate")
    assert ours.kv_sampling and not trl.kv_sampling
    ids = [list(i) for i in ours._tokenize_prompts(PROMPTS)[0]]
    batch = [ids[i] for i in (0, 0, 1, 1, 2, 2, 4, 4)]
    got, _ = ours._generate_single_turn(batch, None, {}, 2)
    want, _ = trl._generate_single_turn(batch, None, {}, 2)
    assert got == want
    assert any(c[-1] in ours.eos_token_ids for c in got)


def test_tool_episodes_equal_generate_turn_by_turn(smollm2):
    """Episodes with real tool-result suffixes (SmolLM2's template renders the tool turn):
    every model turn equals ``generate`` on the conversation so far."""
    from rlvr.evaluation.episodes import tool_suffix_ids
    from rlvr.evaluation.multiturn import TurnSampling, sample_episodes

    model, tokenizer = smollm2
    stops = stop_token_ids(tokenizer, model.generation_config)
    budget = 64
    prompts = [ChatFormat().ids(tokenizer, p) for p in PROMPTS[:4]]
    seen: dict[int, list[tuple[list[int], list[int]]]] = {}

    def tools(ended):
        out = []
        for i, turn in ended:
            turns = seen.setdefault(i, [])
            message = {"role": "tool", "name": "lookup", "content": "result " * (1 + i)}
            suffix = tool_suffix_ids(tokenizer, [message]) if len(turns) < 1 else None
            turns.append((turn, suffix or []))
            out.append(suffix)
        return out

    sampling = TurnSampling(budget=budget, eos_token_ids=stops, pad_token_id=stops[0], greedy=True, batch_size=3)
    traces = sample_episodes(model, prompts, tools, sampling)
    for i, trace in enumerate(traces):
        context, used = list(prompts[i]), 0
        for turn, suffix in seen[i]:
            assert turn == generate_greedy(model, context, budget - used, stops), (i, len(context))
            context += turn + suffix
            used += len(turn) + len(suffix)
        assert trace.ids == context[: len(trace.ids)]
    assert sum(1 for turns in seen.values() if len(turns) > 1) >= 2  # tools answered, turns went on
