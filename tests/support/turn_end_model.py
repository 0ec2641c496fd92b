"""A Qwen3-Base-style model folder (Qwen3's vocabulary and ChatML template, end token
``<|endoftext|>``) whose one-layer model continues a fixed chain of tokens.

The layer's attention and MLP outputs are zero, so the last hidden state is the last input
token's embedding; each chained token's embedding is a unit direction whose ``lm_head`` row
points at its successor with a logit near 570, so sampling at temperature 1 follows the chain
(other tokens' logits are 0). After the assistant header the chain is ``Answer`` ``:``
``<|im_end|>``, then ``<|im_start|>`` for ever: a sampler that misses the turn's end runs on.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.real_tokenizers import qwen3_tokenizer

BASE_EOS = "<|endoftext|>"
IM_START, IM_END, EOT = 151644, 151645, 151643


def answer_ids(tokenizer) -> list[int]:
    """The two tokens the model says before it ends its turn."""
    ids = tokenizer.encode("Answer:", add_special_tokens=False)
    assert len(ids) == 2, ids
    return ids


def chain(tokenizer) -> list[int]:
    header_end = tokenizer.encode("\n", add_special_tokens=False)[-1]  # the header's last token
    return [header_end, *answer_ids(tokenizer), IM_END, IM_START, IM_START]


def turn_end_model_folder(folder: Path) -> Path | None:
    """The folder (None where Qwen's vocabulary is not installed)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen3_tokenizer(BASE_EOS)
    if tokenizer is None:
        return None
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=EOT,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    with torch.no_grad():
        model.model.layers[0].self_attn.o_proj.weight.zero_()
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        links = chain(tokenizer)
        for slot, (token, following) in enumerate(zip(links, links[1:], strict=False)):
            model.model.embed_tokens.weight[token].zero_()
            model.model.embed_tokens.weight[token, slot] = 1.0
            model.lm_head.weight[following, slot] = 100.0
    model.generation_config.eos_token_id = EOT  # as Qwen3-4B-Base's generation_config.json
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
