"""The ``hf`` judge backend: a local Hugging Face causal LM judging in-process, registered into verifiers.

``verifier_options.judge.backend=hf`` with settings in ``verifier_options.judge.hf``: ``model`` ("tiny", a model
folder or a cached Hub id), ``cache_dir`` (where the tiny model is built), ``dtype``,
``device`` (auto: CUDA when present), ``max_new_tokens``, ``batch_size`` and ``timeout_s``
(generation stops there and the batch counts as timed out). The model source is checked when
the verifier is built (before any policy model loads); the weights load on the first judgement.
Replies are greedy, from the tokenizer's chat template, one lock around the model so the
scorer's threads take turns.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.judge.backend import JudgeFailure, JudgeSetupError, Messages, register_judge_backend

log = logging.getLogger(__name__)
FIX = "verifier_options.judge.hf"


@dataclass
class HFJudgeBackend:
    """A judge model loaded once per process, generating greedily in batches."""

    model: str = "tiny"
    cache_dir: str = field(default_factory=lambda: os.environ.get("RLVR_CACHE", "~/.cache/rlvr"))
    dtype: str = "float32"
    device: str = "auto"
    max_new_tokens: int = 32
    batch_size: int = 16
    timeout_s: float = 60.0
    tiny: dict[str, Any] = field(default_factory=dict)  # TinySpecConfig fields for model=tiny

    def __post_init__(self) -> None:
        from rlvr.config import ConfigError, ModelConfig, TinySpecConfig, check_model_source
        from rlvr.models.loading import check_hub_model_available, resolve_model_path

        if self.max_new_tokens < 1 or self.batch_size < 1 or self.timeout_s <= 0:
            raise JudgeSetupError(f"{FIX}: max_new_tokens and batch_size >= 1, timeout_s > 0")
        try:
            check_model_source(self.model, self.cache_dir)
            self.config = ModelConfig(name=self.model, dtype=self.dtype, tiny=TinySpecConfig(**self.tiny))
            self.path = resolve_model_path(self.config, self.cache_dir)
            if self.model != "tiny":
                check_hub_model_available(self.path)
        except (ConfigError, TypeError) as err:
            raise JudgeSetupError(f"judge backend 'hf': {err} (in {FIX}.model)") from None
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return f"hf:{self.path}"

    def __getstate__(self) -> dict[str, Any]:  # a copy reloads the weights on first use
        return {k: v for k, v in self.__dict__.items() if k not in ("_loaded", "_lock")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._loaded, self._lock = None, threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            import torch

            from rlvr.models.loading import load_model, load_tokenizer

            device = self.device
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            model = load_model(self.path, self.config).to(device).eval()
            self._loaded = (model, load_tokenizer(self.path, self.config))
            log.info("judge model %s loaded on %s", Path(self.path).name, device)
        return self._loaded

    def _generate(self, batch: list[Messages]) -> list[str]:
        import torch

        from rlvr.models.chat_format import ChatFormat, stop_token_ids

        model, tokenizer = self._load()
        enc = tokenizer(
            ChatFormat().texts(tokenizer, batch),  # the judge's own template, default options
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        ).to(next(model.parameters()).device)
        started = time.monotonic()
        with torch.inference_mode():
            out = model.generate(
                **enc,
                do_sample=False,
                max_new_tokens=self.max_new_tokens,
                max_time=self.timeout_s,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=list(stop_token_ids(tokenizer, model.generation_config)),
            )
        if time.monotonic() - started >= self.timeout_s:
            raise JudgeFailure(f"judge generation stopped at timeout_s={self.timeout_s:g} s")
        new = out[:, enc["input_ids"].shape[1] :]
        return tokenizer.batch_decode(new, skip_special_tokens=True)

    def complete(self, messages: Messages) -> str:
        reply = self.complete_many([messages])[0]
        if isinstance(reply, JudgeFailure):
            raise reply
        return reply

    def complete_many(self, batch: list[Messages]) -> list[str | JudgeFailure]:
        out: list[str | JudgeFailure] = []
        with self._lock:
            for start in range(0, len(batch), self.batch_size):
                part = list(batch[start : start + self.batch_size])
                try:
                    out += self._generate(part)
                except JudgeFailure as err:
                    out += [err] * len(part)
                except RuntimeError as err:  # e.g. CUDA out of memory: the judge, not the output
                    out += [JudgeFailure(f"judge model failed: {err}")] * len(part)
        return out


register_judge_backend("hf", HFJudgeBackend)
