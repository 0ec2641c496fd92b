"""Offline compute nodes: what a study reads from the Hub, what the local Hub cache lacks, and
a prefetch that, without network, fails naming what it could not fetch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from huggingface_hub import scan_cache_dir, try_to_load_from_cache
from omegaconf import OmegaConf

from rlvr.config import ConfigError, RunConfig
from rlvr.study import offline, prefetch
from rlvr.study.commands import compose

QWEN = offline.HubItem("model", "Qwen/Qwen3-4B-Base")
BLEND = offline.HubItem("dataset", "nvidia/Nemotron-3-Nano-RL-Training-Blend")


def composed(*overrides: str) -> RunConfig:
    return OmegaConf.to_object(compose([*overrides, "run_name=hub"]))  # type: ignore[return-value]


def hub_cache_with(root: Path, repo_id: str, repo_type: str = "model") -> None:
    """One snapshot in the Hub cache's own layout (blobs, refs/main, snapshots/<commit>)."""
    folder = root / f"{repo_type}s--{repo_id.replace('/', '--')}"
    text = b'{"model_type": "qwen3"}'
    blob = hashlib.sha256(text).hexdigest()
    commit = "0" * 40
    (folder / "blobs").mkdir(parents=True)
    (folder / "blobs" / blob).write_bytes(text)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(Path("../../blobs") / blob)


def test_local_folders_count_as_present_and_hub_ids_do_not(tmp_path):
    (tmp_path / "sft").mkdir()
    assert not offline.on_hub(str(tmp_path / "sft"))
    assert not offline.on_hub("/study/experts/math-seed0/final")  # a stage writes it later
    assert not offline.on_hub("tiny")
    assert offline.on_hub("Qwen/Qwen3-4B-Base")


def test_the_stages_hub_models_and_datasets_are_listed_once():
    run = composed("experiment=m2rl_study")
    items = offline.hub_items([("sft", run), ("expert", run), ("mixed", run), ("merge", run)])
    assert QWEN in items and BLEND in items
    assert offline.HubItem("dataset", "allenai/tulu-3-sft-mixture") in items
    assert len(items) == len(set(items))
    blend = items[items.index(BLEND)]
    assert {"nemotron_math", "nemotron_code"} <= set(blend.uses)  # how stages load it
    started = composed("experiment=m2rl_study", "init_from=/study/sft/final")
    assert offline.hub_items([("expert", started)]) == [BLEND]  # the model is a folder


def test_an_empty_cache_lists_the_hub_model_with_the_prefetch_command(tmp_path):
    assert offline.missing([QWEN], tmp_path / "empty") == [QWEN]
    argv = ["experiment=m2rl_study", "study.dry_run=true", "domains.math.data_files=[a b.jsonl]"]
    lines = offline.missing_lines([QWEN], argv)
    assert "model Qwen/Qwen3-4B-Base" in "\n".join(lines)
    # the study's overrides as a shell line, without the dry run that printed it
    expected = "python -m rlvr.study.prefetch experiment=m2rl_study 'domains.math.data_files=[a b.jsonl]'"
    assert lines[-1].endswith(expected)


def test_a_snapshot_in_the_hub_cache_counts_as_present(tmp_path):
    hub_cache_with(tmp_path, QWEN.repo_id)
    # huggingface_hub's own readers see it: the layout is the one offline loads read
    assert try_to_load_from_cache(QWEN.repo_id, "config.json", cache_dir=tmp_path)
    assert scan_cache_dir(tmp_path).repos
    assert offline.missing([QWEN, BLEND], tmp_path) == [BLEND]


def test_fetching_offline_fails_naming_what_it_could_not_fetch(tmp_path):
    failed = offline.fetch([BLEND], tmp_path)  # HF_HUB_OFFLINE=1 in the tests: no network
    assert len(failed) == 1 and failed[0].startswith(str(BLEND))


def test_prefetch_with_the_hub_offline_refuses_naming_the_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(offline, "cached_repos", lambda cache_dir=None: set())
    monkeypatch.setattr(prefetch, "study_items", lambda argv: [QWEN, BLEND])
    with pytest.raises(ConfigError, match="could not fetch model Qwen/Qwen3-4B-Base, dataset nvidia"):
        prefetch.prefetch(["experiment=m2rl_study"])
    assert "2 missing from the cache" in capsys.readouterr().out
    assert prefetch.prefetch(["experiment=m2rl_study"], list_only=True) == 0
