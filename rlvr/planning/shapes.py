"""A model's shape for planning (widths, depth, heads, vocabulary), found without loading it.

Where the shape comes from, first that answers: ``model.shape`` (the model's config.json
fields, written into a model preset so a plan works offline), the embedded model's spec, a
local folder's or the Hugging Face cache's config.json, a packaged model's published shape.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, ModelConfig


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer as the plan counts it (Llama/Qwen/Mistral family)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    qk_norm: bool = False  # Qwen3: an RMSNorm over each query and key head
    max_position_embeddings: int = 0  # 0: unknown
    source: str = ""  # where the shape was read

    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    def layer_parameters(self) -> int:
        h = self.hidden_size
        attention = h * self.q_dim * 2 + h * self.kv_dim * 2  # q, o; k, v
        bias = (self.q_dim + 2 * self.kv_dim) if self.attention_bias else 0
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        return attention + bias + 3 * h * self.intermediate_size + norms  # + gate/up/down

    def parameters(self) -> int:
        embeddings = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        return embeddings + self.num_hidden_layers * self.layer_parameters() + self.hidden_size


REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def shape_from_config(config: dict[str, Any], source: str) -> ModelShape:
    """A ``ModelShape`` from a transformers config.json (or ``model.shape``) dictionary."""
    config = dict(config.get("text_config") or config)  # multimodal configs nest the LM's
    missing = [k for k in REQUIRED if not config.get(k)]
    if missing:
        raise ConfigError(
            f"the model shape from {source} lacks {', '.join(missing)}; set model.shape with "
            "the model's config.json fields (hidden_size, num_hidden_layers, ...)"
        )
    heads = int(config["num_attention_heads"])
    head_dim = config.get("head_dim") or int(config["hidden_size"]) // heads
    return ModelShape(
        vocab_size=int(config["vocab_size"]),
        hidden_size=int(config["hidden_size"]),
        num_hidden_layers=int(config["num_hidden_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=int(config.get("num_key_value_heads") or heads),
        head_dim=int(head_dim),
        intermediate_size=int(config["intermediate_size"]),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        attention_bias=bool(config.get("attention_bias", config.get("model_type") == "qwen2")),
        qk_norm=config.get("model_type") == "qwen3",
        max_position_embeddings=int(config.get("max_position_embeddings") or 0),
        source=source,
    )


@functools.cache
def _tiny_vocabulary() -> int:
    from rlvr.models.tiny import build_tokenizer

    return len(build_tokenizer())


def _tiny_shape(model: ModelConfig) -> ModelShape:
    spec = model.tiny if isinstance(model.tiny, dict) else vars(model.tiny)
    config = {**spec, "vocab_size": _tiny_vocabulary(), "tie_word_embeddings": True, "model_type": "qwen2"}
    return shape_from_config(config, "the embedded model's spec (model.tiny)")


def _config_file(name: str, revision: str | None) -> Path | None:
    folder = Path(name).expanduser()
    for candidate in (folder / "final" / "config.json", folder / "config.json"):
        if candidate.is_file():
            return candidate
    if folder.exists():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - a dependency of transformers
        return None
    cached = try_to_load_from_cache(name, "config.json", revision=revision)
    return Path(cached) if isinstance(cached, str) else None


def model_shape(model: ModelConfig) -> ModelShape | None:
    """The shape of ``model`` without loading weights or using the network; None if unknown."""
    if model.shape:
        return shape_from_config(dict(model.shape), "model.shape")
    if model.name == "tiny":
        return _tiny_shape(model)
    path = _config_file(model.name, model.revision)
    if path is not None:
        return shape_from_config(json.loads(path.read_text()), str(path))
    return None
