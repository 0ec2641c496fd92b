"""``evaluate()``: every model on every benchmark, sampled and greedy, resumable per pair.

k samples per prompt (``eval.k_by_task`` per benchmark) and greedy beside them, scored by the
training verifiers (every test of a code problem: a reward's test cap does not apply); a
(model, benchmark) pair whose summary exists is not recomputed, one whose weights and settings
a finished pair shares copies its records (``rlvr.evaluation.reuse``), and one cut short resumes
at its first unwritten shard (``rlvr.evaluation.sharded``). The ``</think>`` format gate applies
to models trained to think (``eval.format_gate``). One model is loaded at a time. New tokens
are clamped to the model's positions left after the benchmark's longest prompt."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, EvalConfig, RunConfig
from rlvr.config.evaluation import task_k
from rlvr.evaluation.backends import Backend, TransformersBackend, is_episodic, opened_backend
from rlvr.evaluation.benchmarks import benchmark_domain, load_benchmark, micro_domain
from rlvr.evaluation.generation import Decoding
from rlvr.evaluation.results import MODEL_INFO, provenance, study_dir, write_results
from rlvr.evaluation.reuse import (
    copy_twin,
    find_twin,
    reuse_key,
    shard_key,
    weights_fingerprint,
)
from rlvr.evaluation.sharded import BenchmarkJob, evaluate_benchmark
from rlvr.evaluation.shards import ShardStore
from rlvr.rewards.bridge import Scorer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    """One model to evaluate: its label (folder name in the study) and where it loads from."""

    label: str
    path: str  # a model folder, or a Hub id / "tiny" resolved by rlvr.models.loading


@dataclass(frozen=True)
class Pair:
    """One model on one benchmark: where the model loaded from and where its results go."""

    label: str
    bench: str
    path: str  # the folder the weights loaded from
    fingerprint: str | None  # of a local folder's weights (``rlvr.evaluation.reuse``)
    folder: Path  # <study>/eval/<label>


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
        what,
        longest,
        decoding.max_new_tokens,
        limit,
        room,
    )
    return replace(decoding, max_new_tokens=room)


def eval_format_gate(run: RunConfig) -> bool:
    """The ``</think>`` gate of this evaluation: ``eval.format_gate``, else the training's."""
    return run.algo.format_gate if run.eval.format_gate is None else run.eval.format_gate


def make_eval_scorer(run: RunConfig) -> Scorer:
    """The training scorer (same verifiers, options and reasoning format) with eval's pool
    size, the evaluation's format gate, every test of a code problem run within a budget
    that grows with its tests (LiveCodeBench's rule, ``verifiers.code.verifier``), and
    instruction following graded all or nothing (a reward's partial credit is not the
    benchmark's score)."""
    from rlvr.rewards.options import add_sandbox_options, verifier_options
    from rlvr.rewards.scoring import build_scorer
    from verifiers import ReasoningFormat

    options = verifier_options(run)
    add_sandbox_options(run, options)  # code benchmarks run whatever the trained domains
    options["code"]["max_tests"] = None  # a reward's cap (latency) is no benchmark's grading
    options["code"]["sample_time_limit_s"] = None  # nor is the reward's time budget
    for shaping in ("reward", "gate"):  # IFEval is graded all or nothing, whatever the reward
        options.get("ifeval", {}).pop(shaping, None)
    reasoning = ReasoningFormat(strip_think=run.algo.strip_think, format_gate=eval_format_gate(run))
    return build_scorer(reasoning, options, run.eval.workers, run.eval.timeout_s)


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
    log.info(
        "%s %s: the weights of %s, evaluated with the same settings: its records reused", entry.label, bench, twin.name
    )
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
        t: load_benchmark(t, e.max_prompts, run.paths.data_dir, e.seed, levels.get(micro_domain(t))) for t in e.tasks
    }
    if e.backend == "vllm" and (episodic := [t for t in e.tasks if is_episodic(rows[t])]):
        raise ConfigError(
            f"eval tasks {episodic} run multi-turn tool episodes, which use transformers "
            "generation; set eval.backend=transformers or drop them from eval.tasks"
        )
    root = study_dir(run) / "eval"
    scorer = make_eval_scorer(run)
    for entry in models:
        _evaluate_model(run, entry, rows, scorer, root)
    return study_dir(run)


def _evaluate_model(
    run: RunConfig, entry: ModelEntry, rows: dict[str, list[dict]], scorer: Scorer, root: Path
) -> None:
    """``entry`` on every benchmark it has no summary of; its model is released on return."""
    folder = root / entry.label
    todo = [t for t in run.eval.tasks if not (folder / f"{t}.json").is_file()]
    if not todo:
        log.info("%s: every benchmark already evaluated", entry.label)
        return
    fingerprint = weights_fingerprint(entry.path)
    keys = {t: reuse_key(fingerprint, t, run) for t in todo}
    if fingerprint is not None:
        _write_model_info(folder, entry.label, entry.path)
        todo = [t for t in todo if not _reuse(root, entry, t, keys[t])]
        if not todo:
            return
    with opened_backend(run, entry.path) as (backend, path):
        if fingerprint is None:  # a folder's was written above; a Hub id resolves to its cache
            _write_model_info(folder, entry.label, path)
        for bench in todo:
            pair = Pair(entry.label, bench, path, fingerprint, folder)
            records, summary, store = _evaluate_pair(run, pair, rows[bench], backend, scorer)
            summary.update(model=entry.label, model_path=path, reuse_key=keys[bench])
            write_results(folder, bench, records, summary)
            if store is not None:
                store.clear()  # after the summary: the records are all in its JSONL now


def _evaluate_pair(
    run: RunConfig, pair: Pair, rows: list[dict], backend: Backend, scorer: Scorer
) -> tuple[list[dict], dict[str, Any], ShardStore | None]:
    """One model on one benchmark: its records, its summary, and the shards to clear once both
    are written (None: not run, a prompt fills the model's positions)."""
    e, what = run.eval, f"{pair.label}/{pair.bench}"
    if isinstance(backend, TransformersBackend):
        backend.desc = what
    try:
        decoding = fit_to_positions(benchmark_decoding(e, pair.bench), backend, rows, what)
    except PromptTooLong as err:  # recorded, so the report says why; never a 0
        log.warning("%s not run: %s", what, err)
        domain = benchmark_domain(pair.bench)
        return (
            [],
            {"benchmark": pair.bench, "prompts": 0, "domain": domain, "not_run": str(err)},
            None,
        )
    gate = eval_format_gate(run)
    job = BenchmarkJob(pair.label, pair.bench, rows, decoding, e.greedy, gate, e.shard_prompts)
    key = shard_key(pair.path, pair.fingerprint, pair.bench, run, vars(decoding), gate)
    store = ShardStore(pair.folder, pair.bench, key)
    records, summary = evaluate_benchmark(backend, job, scorer, store)
    if decoding.max_new_tokens != e.max_new_tokens:
        summary["max_new_tokens_requested"] = e.max_new_tokens
    log.info(
        "%s: avg@%d %.3f pass@%d %.3f (%d prompts; %d of %d shards read back; format gate %s)",
        *(what, summary["k"], summary["avg_at_k"], summary["k"], summary["pass_at_k"]),
        *(summary["prompts"], summary["shards_resumed"], summary["shards"], gate),
    )
    return records, summary, store
