"""The embedded default: a byte-level character tokenizer and a small Qwen2-shaped causal LM.

Nothing is downloaded: the tokenizer and the randomly initialised model are built from code
with a fixed seed and cached on disk, so every process (and every rank) loads the same
weights. Bytes, not a character vocabulary, make encode->decode the identity on any text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

log = logging.getLogger(__name__)

IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]
# Single-token markers that must survive decoding (they are not "special", so
# skip_special_tokens keeps them): reasoning and tool-call delimiters.
MARKER_TOKENS = [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE]

# One line per tool, ``name(param: type, optional?: type)``; shared with the packaged SmolLM2
# template (rlvr.models.packaged), which lists tools the same way.
TOOL_LINES = (
    "{% set short = {'string': 'str', 'integer': 'int', 'boolean': 'bool', 'number': 'float',"
    " 'array': 'list', 'object': 'dict'} %}"
    "{% for t in tools %}{% set f = t['function'] if t['function'] is defined else t %}"
    "{% set params = f.get('parameters') or {} %}{% set required = params.get('required') or [] %}"
    "{{ '\\n' + f['name'] + '(' }}{% for p, s in (params.get('properties') or {}).items() %}"
    "{% set ty = s.get('type', 'any') if s is mapping else 'any' %}"
    "{{ p }}{% if p not in required %}?{% endif %}{{ ': ' }}"
    "{% if ty is string %}{{ short.get(ty, ty) }}{% else %}{{ ty | join('|') }}{% endif %}"
    "{% if not loop.last %}{{ ', ' }}{% endif %}{% endfor %}{{ ')' }}{% endfor %}"
)
# One message ``m``: assistant turns with {% generation %} marks and Hermes-style tool calls,
# every other role as a plain ChatML turn.
TURN = (
    "{% if m['role'] == 'assistant' %}{{ '<|im_start|>assistant\\n' }}{% generation %}"
    "{{ m['content'] or '' }}"
    "{% for c in m.get('tool_calls') or [] %}{{ '<tool_call>' }}"
    "{{ {'name': c['function']['name'], 'arguments': c['function']['arguments']} | tojson }}"
    "{{ '</tool_call>' }}{% endfor %}{{ '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{% else %}{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' }}"
    "{% endif %}"
)
# Qwen-style ChatML with {% generation %} marks, so TRL's assistant-only SFT loss works, and
# tool rendering compatible with Hermes-style <tool_call> blocks. Tools render one line each:
# full JSON schemas would not fit the context.
CHAT_TEMPLATE = (
    "{% if tools %}{{ '<|im_start|>system\\nTools:' }}" + TOOL_LINES + "{{ '<|im_end|>\\n' }}{% endif %}"
    "{% for m in messages %}" + TURN + "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# How TRL (``tokenizer.parse_response``) splits a generated turn into reasoning, Hermes-style
# tool calls and content; saved with the tokenizer so GRPO runs with tools need no setup.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": IM_START + "assistant\n",
    "fields": {
        "reasoning_content": {
            "open": THINK_OPEN,
            "close_pattern": r"</think>\s*",
            "content": "text",
        },
        "tool_calls": {
            "open": TOOL_CALL_OPEN,
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of the embedded model; its hash names the cache folder."""

    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 512
    max_position_embeddings: int = 512
    rope_theta: float = 10000.0
    seed: int = 0

    def digest(self) -> str:
        blob = json.dumps([asdict(self), RESPONSE_TEMPLATE], sort_keys=True) + CHAT_TEMPLATE
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer with no merges: one token per byte, specials as single tokens."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=None,
        eos_token=IM_END,
        pad_token=PAD,
        additional_special_tokens=[IM_START],
        model_max_length=TinyModelSpec.max_position_embeddings,
        padding_side="left",
    )
    tokenizer.add_tokens(MARKER_TOKENS, special_tokens=False)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer


def build_model(spec: TinyModelSpec, vocab_size: int, pad_token_id: int, eos_token_id: int, **config: Any):
    """A randomly initialised Qwen2 causal LM, deterministic for a given spec; ``config``
    adds Qwen2Config settings the spec leaves at their defaults (e.g. ``initializer_range``)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_position_embeddings,
        rope_theta=spec.rope_theta,
        tie_word_embeddings=True,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=None,
        **config,
    )
    torch.manual_seed(spec.seed)
    return Qwen2ForCausalLM(config)


def ensure_tiny_model(cache_dir: str | os.PathLike[str], spec: TinyModelSpec = TinyModelSpec()) -> Path:
    """Create the tiny model folder on first use (atomically) and return its path."""
    target = Path(cache_dir).expanduser() / f"tiny-qwen2-{spec.digest()}"
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent))
    try:
        tokenizer = build_tokenizer()
        model = build_model(spec, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.generation_config.eos_token_id = tokenizer.eos_token_id
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "tiny_spec.json").write_text(json.dumps(asdict(spec), indent=2))
        try:
            staging.rename(target)  # atomic: concurrent ranks race, one wins, all see a whole folder
        except OSError:
            if not (target / "config.json").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("embedded tiny model ready at %s", target)
    return target
