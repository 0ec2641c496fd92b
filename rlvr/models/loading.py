"""Resolve ``model.name`` to a loadable folder or Hub id, and load tokenizer and model."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rlvr.config import ConfigError, ModelConfig
from rlvr.models.packaged import ensure_packaged_model, is_packaged
from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model

log = logging.getLogger(__name__)

_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "auto": "auto"}


def model_folder(path: str | Path) -> Path:
    """A loadable model folder: a run folder's ``final/``, a model folder, or a LoRA adapter."""
    p = Path(path).expanduser().resolve()
    for candidate in (p / "final", p):
        if (candidate / "config.json").is_file() or (candidate / "adapter_config.json").is_file():
            return candidate
    raise ConfigError(
        f"{path!r} is neither a run folder with final/ nor a model folder (no config.json); "
        "pass a finished training run (outputs/<experiment>/<run>) or a saved model"
    )


def resolve_model_path(model: ModelConfig, cache_dir: str) -> str:
    """The folder or Hub id to load; builds the embedded tiny model, or converts a packaged
    one (``rlvr.models.packaged``), on first use."""
    if model.name == "tiny":
        spec = TinyModelSpec(**vars(model.tiny)) if not isinstance(model.tiny, dict) else TinyModelSpec(**model.tiny)
        return str(ensure_tiny_model(Path(cache_dir).expanduser() / "models", spec))
    if is_packaged(model.name):
        return str(ensure_packaged_model(model.name, Path(cache_dir).expanduser() / "models"))
    path = Path(model.name).expanduser()
    return str(path.resolve()) if path.exists() else model.name


def check_hub_model_available(name: str) -> None:
    """Offline runs can only load Hub models already in the local cache: say so up front."""
    if name == "tiny" or is_packaged(name):
        return
    if Path(name).exists() or os.environ.get("HF_HUB_OFFLINE") != "1":
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise ConfigError(
            f"model {name!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1; "
            "unset HF_HUB_OFFLINE to download it, or use model=tiny / a local folder"
        )


def load_tokenizer(path: str, model: ModelConfig):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, revision=model.revision, trust_remote_code=model.trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # generation batches
    return tokenizer


def load_model(path: str, model: ModelConfig):
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": _DTYPES[model.dtype], "trust_remote_code": model.trust_remote_code}
    if model.attn_implementation:
        kwargs["attn_implementation"] = model.attn_implementation
    return AutoModelForCausalLM.from_pretrained(path, revision=model.revision, **kwargs)


def model_init_kwargs(model: ModelConfig) -> dict:
    """What TRL passes to ``from_pretrained`` when it loads the model itself."""
    kwargs: dict = {"dtype": _DTYPES[model.dtype]}
    if model.attn_implementation:
        kwargs["attn_implementation"] = model.attn_implementation
    if model.trust_remote_code:
        kwargs["trust_remote_code"] = True
    return kwargs
