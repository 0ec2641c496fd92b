"""Generation backends for evaluation: transformers (with live tool episodes) and vLLM.

One model at a time: ``opened_backend`` releases a model, and its GPU memory, before the next
one loads."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rlvr.config import ConfigError
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.heldout import sample_and_score, score_completions
from rlvr.models.chat_format import ChatFormat, stop_token_ids
from rlvr.rewards.bridge import Scorer

if TYPE_CHECKING:
    from rlvr.config import RunConfig

log = logging.getLogger(__name__)


def is_episodic(rows: Sequence[dict]) -> bool:
    """Rows that name a tool environment run as multi-turn episodes, not single completions."""
    return any(r.get("environment") for r in rows)


class Backend(Protocol):
    tokenizer: Any
    chat: ChatFormat
    seed: int

    @property
    def max_positions(self) -> int | None:
        """The model's context length (prompt + completion); None when unknown."""

    def generate(self, prompts: Sequence[Sequence[dict]], decoding: Decoding) -> list[list[str]]:
        """Completions per prompt (k, or one when greedy), in input order."""

    def with_seed(self, seed: int) -> Backend:
        """The same model, sampling from ``seed``."""

    def close(self) -> None:
        """Drop the model (and its engine); the backend generates nothing afterwards."""


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
        order = sorted(range(len(prompts)), key=lambda i: sum(len(m.get("content") or "") for m in prompts[i]))
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

    def with_seed(self, seed: int) -> TransformersBackend:
        return replace(self, seed=seed)

    def close(self) -> None:
        self.model = None  # the last reference the evaluation holds: freed by the next gc


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

    def with_seed(self, seed: int) -> VllmBackend:
        return replace(self, seed=seed)

    def close(self) -> None:
        """Shut the engine down: vLLM keeps its engine process, KV cache and distributed state
        past ``del`` (its maintainers' way, vLLM >= 0.10: stop the engine core, drop the
        ``LLM``, then ``vllm.distributed.cleanup_dist_env_and_memory``, which destroys the
        model-parallel groups and the process group, collects and empties the CUDA cache)."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if callable(shutdown := getattr(core, "shutdown", None)):
            shutdown()  # v1 engine: its engine-core process holds the weights and KV cache
        del llm, core, shutdown
        from vllm.distributed import cleanup_dist_env_and_memory

        cleanup_dist_env_and_memory()


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


@contextmanager
def opened_backend(run: RunConfig, path: str) -> Iterator[tuple[Backend, str]]:
    """The model at ``path`` (a folder, a Hub id or "tiny") loaded for generation, and where it
    loaded from; on leaving, the backend is closed and its memory released (``release``), so
    two models never share the accelerator."""
    backend, resolved = _open_backend(run, path)
    try:
        yield backend, resolved
    finally:
        release(backend)


def release(backend: Backend) -> None:
    """Close the backend, then collect it and empty the CUDA cache (what the model held)."""
    backend.close()
    gc.collect()
    import torch  # heavy: imported once a model was loaded, not with this module

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    log.debug("evaluation backend released")


def _open_backend(run: RunConfig, path: str) -> tuple[Backend, str]:
    from rlvr.models.loading import load_model, load_tokenizer, resolve_model_path

    if not Path(path).exists():
        path = resolve_model_path(replace(run.model, name=path), run.paths.cache_dir)
    chat = ChatFormat.of(run.model)  # the training runs' template options
    if run.eval.backend == "vllm":
        return VllmBackend.load(path, run.model.dtype, run.eval.seed, chat), path
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_model(path, run.model).to(device)
    tokenizer = load_tokenizer(path, run.model)
    backend = TransformersBackend(model, tokenizer, run.eval.batch_size, run.eval.seed, chat=chat)
    return backend, path
