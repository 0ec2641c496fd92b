"""``evaluate()``: every model on every benchmark, sampled and greedy, resumable per pair.

k samples per prompt (``eval.k_by_task`` per benchmark) and greedy beside them, scored by the
training verifiers; a (model, benchmark) pair whose summary exists is not recomputed, and one
whose weights and settings a finished pair shares copies its records (``rlvr.evaluation.reuse``).
New tokens are clamped to the model's positions left after the benchmark's longest prompt."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, EvalConfig, RunConfig
from rlvr.config.evaluation import task_k
from rlvr.evaluation.backends import (
    Backend,
    TransformersBackend,
    VllmBackend,
    generate_and_score,
    is_episodic,
)
from rlvr.evaluation.benchmarks import benchmark_domain, load_benchmark, micro_domain
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.metrics import summarise
from rlvr.evaluation.results import (
    MODEL_INFO,
    provenance,
    sample_records,
    study_dir,
    write_results,
)
from rlvr.evaluation.reuse import copy_twin, find_twin, reuse_key, weights_fingerprint
from rlvr.models.chat_format import ChatFormat
from rlvr.rewards.bridge import Scorer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    """One model to evaluate: its label (folder name in the study) and where it loads from."""

    label: str
    path: str  # a model folder, or a Hub id / "tiny" resolved by rlvr.models.loading


def parse_models(entries: Sequence[str]) -> list[ModelEntry]:
    """``label=path`` pairs or bare paths (label: the run folder's or model folder's name)."""
    from rlvr.config import check_model_source
    from rlvr.models.loading import model_folder

    out: list[ModelEntry] = []
    for entry in entries:
        label, sep, path = entry.partition("=")
        if not sep:
            label, path = "", entry
        if Path(path).expanduser().exists():
            folder = model_folder(path)
            label = label or (folder.parent.name if folder.name == "final" else folder.name)
            path = str(folder)
        else:
            check_model_source(path, "")  # "tiny" or a Hub id; a missing folder fails here
        out.append(ModelEntry(label or path.replace("/", "_"), path))
    labels = [m.label for m in out]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"eval.models has duplicate labels {labels}; name them label=path")
    return out


def evaluate_benchmark(
    backend: Backend,
    label: str,
    bench: str,
    rows: list[dict],
    decoding: Decoding,
    scorer: Scorer,
    with_greedy: bool,
    format_gate: bool = False,
) -> tuple[list[dict], dict[str, Any]]:
    """Per-sample records and the summary of one model on one benchmark."""
    started = time.perf_counter()
    sampled, sampled_v = generate_and_score(backend, rows, decoding, scorer, format_gate)
    greedy, greedy_v = None, None
    if with_greedy and not decoding.greedy:
        greedy_decoding = Decoding(greedy=True, max_new_tokens=decoding.max_new_tokens)
        greedy, greedy_v = generate_and_score(backend, rows, greedy_decoding, scorer, format_gate)
    sampling_s = time.perf_counter() - started  # generation and scoring
    mode = "greedy" if decoding.greedy else "sample"
    records = sample_records(label, bench, rows, sampled, sampled_v, mode)
    if greedy is not None:
        records += sample_records(label, bench, rows, greedy, greedy_v, "greedy")
    summary = {
        "model": label,
        "benchmark": bench,
        "domain": benchmark_domain(bench),
        # greedy decoding alone: its verdicts are the greedy accuracy, over one sample each
        **summarise(
            rows,
            sampled_v,
            sampled_v if decoding.greedy else greedy_v,
            1 if decoding.greedy else decoding.k,
        ),
        "sampling_s": sampling_s,
        "samples_per_s": len(records) / sampling_s if sampling_s > 0 else 0.0,
        "seconds": time.perf_counter() - started,
        "decoding": vars(decoding).copy(),
    }
    return records, summary


def benchmark_decoding(e: EvalConfig, bench: str) -> Decoding:
    """The benchmark's decoding: ``eval.k_by_task[bench]`` samples per prompt, else ``eval.k``.

    Temperature 0 is greedy decoding alone (one completion per prompt), as in vLLM.
    """
    greedy = e.temperature == 0
    k = 1 if greedy else task_k(e, bench)
    return Decoding(k, e.temperature, e.top_p, e.max_new_tokens, greedy=greedy)


class PromptTooLong(Exception):
    """A benchmark prompt alone fills the model's positions: the benchmark is not run."""


def fit_to_positions(decoding: Decoding, backend: Backend, rows: list[dict], what: str) -> Decoding:
    """``max_new_tokens`` clamped so the longest prompt plus its completion fits the model's
    positions (a warning says so; the summary records the clamped decoding). A prompt that
    alone fills them raises ``PromptTooLong``. Tool episodes keep their own per-turn limit."""
    limit = backend.max_positions
    if not limit or not rows or is_episodic(rows):
        return decoding
    longest = max(len(backend.chat.ids(backend.tokenizer, r["prompt"])) for r in rows)
    room = limit - longest
    if room < 1:
        raise PromptTooLong(
            f"a prompt of {longest} tokens fills the model's {limit} positions (a model with a "
            "longer context can run it)"
        )
    if decoding.max_new_tokens <= room:
        return decoding
    log.warning(
        "%s: the longest prompt (%d tokens) + eval.max_new_tokens=%d exceed the model's %d "
        "positions: generating at most %d new tokens",
        what, longest, decoding.max_new_tokens, limit, room,
    )  # fmt: skip
    return replace(decoding, max_new_tokens=room)


def make_eval_scorer(run: RunConfig) -> Scorer:
    """The training scorer (same verifiers, options and reasoning format) with eval's pool size."""
    from rlvr.rewards.options import add_sandbox_options, verifier_options
    from rlvr.rewards.scoring import build_scorer
    from verifiers import ReasoningFormat

    options = verifier_options(run)
    add_sandbox_options(run, options)  # code benchmarks run whatever the trained domains
    reasoning = ReasoningFormat(strip_think=run.algo.strip_think, format_gate=run.algo.format_gate)
    return build_scorer(reasoning, options, run.eval.workers, run.eval.timeout_s)


def _open_backend(run: RunConfig, entry: ModelEntry) -> tuple[Backend, str]:
    from rlvr.models.loading import load_model, load_tokenizer, resolve_model_path

    path = entry.path
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


def _free_memory() -> None:
    """Release the last model before the next one loads (GPU memory is the limit there)."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _write_model_info(folder: Path, label: str, path: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    info = {"label": label, **provenance(path)}
    (folder / MODEL_INFO).write_text(json.dumps(info, indent=2))


def _reuse(root: Path, entry: ModelEntry, bench: str, key: str | None) -> bool:
    """Copy ``bench``'s records from a model with the same weights and settings, if one has
    them (``rlvr.evaluation.reuse``); whether it did."""
    twin = find_twin(root, entry.label, bench, key)
    if twin is None:
        return False
    records, summary = copy_twin(twin, entry.label, bench, entry.path)
    write_results(root / entry.label, bench, records, summary)
    log.info("%s %s: the weights of %s, evaluated with the same settings: its records reused",
             entry.label, bench, twin.name)  # fmt: skip
    return True


def evaluate(run: RunConfig, run_dir: Path | None = None) -> Path:
    """Every model x every benchmark (skipping finished pairs); returns the study folder."""
    e = run.eval
    if not e.models or not e.tasks:
        raise ConfigError("set eval.models=[label=path,...] and eval.tasks=[gsm8k,micro_math,...]")
    models = parse_models(e.models)
    from rlvr.models.loading import check_hub_model_available

    for m in models:
        check_hub_model_available(m.path)  # offline and not cached: fail before any model
    levels = getattr(run.mixture, "difficulty", None) or {}  # the training run's micro levels
    rows = {
        t: load_benchmark(t, e.max_prompts, run.paths.data_dir, e.seed, levels.get(micro_domain(t)))
        for t in e.tasks
    }
    if e.backend == "vllm" and (episodic := [t for t in e.tasks if is_episodic(rows[t])]):
        raise ConfigError(
            f"eval tasks {episodic} run multi-turn tool episodes, which use transformers "
            "generation; set eval.backend=transformers or drop them from eval.tasks"
        )
    root = study_dir(run) / "eval"
    scorer = make_eval_scorer(run)
    for entry in models:
        folder = root / entry.label
        todo = [t for t in e.tasks if not (folder / f"{t}.json").is_file()]
        if not todo:
            log.info("%s: every benchmark already evaluated", entry.label)
            continue
        fingerprint = weights_fingerprint(entry.path)
        keys = {t: reuse_key(fingerprint, t, run) for t in todo}
        if fingerprint is not None:
            _write_model_info(folder, entry.label, entry.path)
            todo = [t for t in todo if not _reuse(root, entry, t, keys[t])]
            if not todo:
                continue
        backend, path = _open_backend(run, entry)
        if fingerprint is None:  # a folder's was written above; a Hub id resolves to its cache
            _write_model_info(folder, entry.label, path)
        for bench in todo:
            if isinstance(backend, TransformersBackend):
                backend.desc = f"{entry.label}/{bench}"
            try:
                decoding = fit_to_positions(
                    benchmark_decoding(e, bench), backend, rows[bench], f"{entry.label}/{bench}"
                )
            except PromptTooLong as err:  # recorded, so the report says why; never a 0
                log.warning("%s %s not run: %s", entry.label, bench, err)
                not_run = {"model": entry.label, "benchmark": bench, "prompts": 0,
                           "domain": benchmark_domain(bench), "not_run": str(err)}  # fmt: skip
                write_results(folder, bench, [], {**not_run, "model_path": path})
                continue
            records, summary = evaluate_benchmark(
                backend, entry.label, bench, rows[bench], decoding, scorer, e.greedy,
                run.algo.format_gate,
            )  # fmt: skip
            if decoding.max_new_tokens != e.max_new_tokens:
                summary["max_new_tokens_requested"] = e.max_new_tokens
            summary.update(model_path=path, reuse_key=keys[bench])
            write_results(folder, bench, records, summary)
            log.info(
                "%s %s: avg@%d %.3f pass@%d %.3f (%d prompts)",
                entry.label, bench, summary["k"], summary["avg_at_k"], summary["k"], summary["pass_at_k"],
                summary["prompts"],
            )  # fmt: skip
        del backend
        _free_memory()
    return study_dir(run)
