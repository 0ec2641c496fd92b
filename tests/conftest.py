"""Project-wide test set-up: offline mode, no W&B, a private model cache, the shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before anything imports huggingface_hub / datasets / wandb.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "disabled"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def rlvr_cache(tmp_path_factory) -> Path:
    """A cache folder shared by one test session (the tiny model is built once per worker)."""
    path = tmp_path_factory.getbasetemp().parent / "rlvr-cache"
    path.mkdir(parents=True, exist_ok=True)
    os.environ["RLVR_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(rlvr_cache) -> Path:
    from rlvr.tiny_model import ensure_tiny_model

    return ensure_tiny_model(rlvr_cache / "models")
