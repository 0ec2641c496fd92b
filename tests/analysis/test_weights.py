"""The streaming weight reader: shards and index files, slices covering each tensor once, bad
folders refused with the fix named."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import save_model, small_tensors

from rlvr.analysis.weights import ShardedWeights, row_slices, stream
from rlvr.config import ConfigError


@pytest.mark.parametrize("shards", [1, 3])
def test_slices_rebuild_every_tensor_whatever_the_sharding(tmp_path, shards):
    tensors = small_tensors() | {"scalar": torch.tensor(2.5), "steps": torch.arange(4)}
    base = save_model(tmp_path / "sft", tensors, shards=shards)
    other = save_model(tmp_path / "other", {n: t * 2 for n, t in tensors.items()})
    # mapped_bytes=1: a file is reopened before every read, and nothing changes
    readers = [ShardedWeights(base, mapped_bytes=1), ShardedWeights(other)]
    parts: dict[str, list[torch.Tensor]] = {}
    offsets: dict[str, int] = {}
    for chunk in stream(readers[0], readers[1:], chunk_elements=100):
        assert chunk.offset == offsets.get(chunk.name, 0)  # in order, no gap, no overlap
        offsets[chunk.name] = chunk.offset + chunk.base.numel()
        assert chunk.base.numel() <= 100  # no row here is longer
        assert torch.equal(chunk.delta, chunk.models - chunk.base)
        parts.setdefault(chunk.name, []).append(chunk.models[0])
    assert sorted(parts) == sorted(n for n in tensors if n != "steps")  # float tensors only
    for name, pieces in parts.items():
        assert torch.equal(torch.cat(pieces), (tensors[name] * 2).reshape(-1).float()), name


def test_row_slices_cover_a_tensor():
    assert list(row_slices((10, 4), 12)) == [(0, 3, 0), (3, 6, 12), (6, 9, 24), (9, 10, 36)]
    assert list(row_slices((5, 1000), 10)) == [(i, i + 1, 1000 * i) for i in range(5)]
    assert list(row_slices((), 10)) == [(0, 1, 0)]


def test_bf16_weights_are_read_as_float32(tmp_path):
    folder = save_model(tmp_path / "m", {"w": torch.tensor([1.5, -2.0]).to(torch.bfloat16)})
    values = ShardedWeights(folder).read("w", 0, 2)
    assert values.dtype == torch.float32 and values.tolist() == [1.5, -2.0]


def test_mismatched_models_and_missing_weights_name_the_fix(tmp_path):
    base = save_model(tmp_path / "sft", {"w": torch.zeros(4, 4)})
    other = save_model(tmp_path / "other", {"w": torch.zeros(4, 5)})
    with pytest.raises(ConfigError, match="does not match the SFT model"):
        list(stream(ShardedWeights(base), [ShardedWeights(other)]))
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 8}))
    with pytest.raises(ConfigError, match="LoRA adapter: merge it"):
        ShardedWeights(adapter)
