"""Generation backends for evaluation: transformers (with live tool episodes) and vLLM."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rlvr.config import ConfigError
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.heldout import sample_and_score, score_completions
from rlvr.models.chat_format import ChatFormat, stop_token_ids
from rlvr.rewards.bridge import Scorer


def is_episodic(rows: Sequence[dict]) -> bool:
    """Rows that name a tool environment run as multi-turn episodes, not single completions."""
    return any(r.get("environment") for r in rows)


class Backend(Protocol):
    tokenizer: Any
    chat: ChatFormat

    @property
    def max_positions(self) -> int | None:
        """The model's context length (prompt + completion); None when unknown."""

    def generate(self, prompts: Sequence[Sequence[dict]], decoding: Decoding) -> list[list[str]]:
        """Completions per prompt (k, or one when greedy), in input order."""


@dataclass
class TransformersBackend:
    """Batched, left-padded generation through ``rlvr.evaluation.generation`` with a progress bar."""

    model: Any
    tokenizer: Any
    batch_size: int
    seed: int
    desc: str = ""
    chat: ChatFormat = ChatFormat()

    @property
    def max_positions(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def generate(self, prompts: Sequence[Sequence[dict]], decoding: Decoding) -> list[list[str]]:
        from tqdm.auto import tqdm

        from rlvr.evaluation.generation import generate

        per_prompt = 1 if decoding.greedy else decoding.k
        chunk = max(1, self.batch_size // per_prompt) * 4  # a few batches per progress tick
        # similar lengths share a chunk (less padding); results go back to input order
        order = sorted(
            range(len(prompts)), key=lambda i: sum(len(m.get("content") or "") for m in prompts[i])
        )
        out: list[list[str]] = [[] for _ in prompts]
        bar = tqdm(total=len(prompts), desc=self.desc, unit="prompt", leave=False)
        for start in range(0, len(order), chunk):
            idx = order[start : start + chunk]
            part = [prompts[i] for i in idx]
            texts = generate(
                self.model,
                self.tokenizer,
                part,
                decoding,
                self.batch_size,
                self.seed + start,
                chat=self.chat,
            )
            for i, t in zip(idx, texts, strict=True):
                out[i] = t
            bar.update(len(part))
        bar.close()
        return out


@dataclass
class VllmBackend:
    """vLLM generation (GPU); imported only when ``eval.backend=vllm``."""

    llm: Any
    tokenizer: Any
    seed: int
    chat: ChatFormat = ChatFormat()
    stops: tuple[int, ...] = ()
    max_positions: int | None = None  # vLLM's max_model_len

    @classmethod
    def load(cls, path: str, dtype: str, seed: int, chat: ChatFormat = ChatFormat()) -> VllmBackend:
        from transformers import GenerationConfig
        from vllm import LLM

        llm = LLM(model=path, dtype=dtype if dtype != "float32" else "auto", seed=seed)
        tokenizer = llm.get_tokenizer()
        try:
            generation = GenerationConfig.from_pretrained(path)
        except OSError:  # a folder without generation_config.json
            generation = None
        stops = stop_token_ids(tokenizer, generation)
        return cls(llm, tokenizer, seed, chat, stops, _max_model_len(llm))

    def generate(self, prompts: Sequence[Sequence[dict]], decoding: Decoding) -> list[list[str]]:
        from vllm import SamplingParams

        params = SamplingParams(
            n=1 if decoding.greedy else decoding.k,
            temperature=0.0 if decoding.greedy else decoding.temperature,
            top_p=1.0 if decoding.greedy else decoding.top_p,
            max_tokens=decoding.max_new_tokens,
            seed=self.seed,
            stop_token_ids=list(self.stops),  # the ids training stops at, not only vLLM's own
        )
        outputs = self.llm.generate(self.chat.texts(self.tokenizer, prompts), params)
        return [[o.text for o in out.outputs] for out in outputs]


def _max_model_len(llm: Any) -> int | None:
    """The engine's context length (the model's positions unless ``max_model_len`` cut it)."""
    for owner in (getattr(llm, "llm_engine", None), llm):
        length = getattr(getattr(owner, "model_config", None), "max_model_len", None)
        if length:
            return int(length)
    return None


def generate_and_score(
    backend: Backend, rows: list[dict], decoding: Decoding, scorer: Scorer, format_gate: bool
) -> tuple[list[list[str]], list]:
    """Completions and verdicts per row; environment rows run as live tool episodes."""
    if is_episodic(rows):
        if not isinstance(backend, TransformersBackend):
            raise ConfigError("tool-environment benchmarks need eval.backend=transformers")
        return sample_and_score(
            backend.model,
            backend.tokenizer,
            rows,
            decoding,
            scorer,
            batch_size=backend.batch_size,
            seed=backend.seed,
            format_gate=format_gate,
            chat=backend.chat,
        )
    completions = backend.generate([r["prompt"] for r in rows], decoding)
    return completions, score_completions(rows, completions, scorer)
