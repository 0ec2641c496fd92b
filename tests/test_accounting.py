"""Compute accounting counts the devices a separate generation server holds, beside the
training processes; colocated generation (the one-step-ahead copy too) adds none."""

from __future__ import annotations

import json

import pytest
from test_config import compose_run, hydra_context  # noqa: F401 (the Hydra context fixture)

from rlvr.config import ConfigError
from rlvr.runs.accounting import generation_placement, run_cost, sum_compute, training_compute

SERVER = ["trainer.use_vllm=true", "trainer.vllm_mode=server", "trainer.vllm_server_devices=2"]


def test_a_vllm_server_run_counts_the_servers_devices(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")  # four training processes
    run = compose_run(*SERVER)
    assert generation_placement(run.trainer) == {"placement": "server", "server_devices": 2}
    compute = training_compute(run, wall_s=100.0)
    assert compute["processes"] == 4
    assert compute["generation_server_device_seconds"] == 200.0
    assert compute["device_seconds"] == 600.0  # (4 training + 2 serving) x 100 s


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["trainer.use_vllm=true", "trainer.vllm_mode=colocate", "trainer.vllm_server_devices=2"],
        ["trainer.async_generation=true"],
    ],
)
def test_colocated_generation_adds_no_devices(monkeypatch, overrides):
    monkeypatch.setenv("WORLD_SIZE", "2")
    compute = training_compute(compose_run(*overrides), wall_s=50.0)
    assert compute["generation_placement"] == "colocate"
    assert compute["generation_server_devices"] == 0
    assert compute["device_seconds"] == 100.0


def test_run_cost_and_sums_carry_the_server_into_rl_device_seconds(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    served, colocated = tmp_path / "served", tmp_path / "colocated"
    for folder, overrides in ((served, SERVER), (colocated, [])):
        folder.mkdir()
        compute = training_compute(compose_run(*overrides), wall_s=10.0)
        summary = {"compute": compute, "rl": {"seconds": 8.0}}
        (folder / "summary.json").write_text(json.dumps(summary))
    cost = run_cost(served)
    assert cost["device_seconds"] == 30.0  # 1 trainer + 2 server devices, 10 s
    assert cost["rl_device_seconds"] == 24.0  # the server was held through the RL steps
    assert cost["generation_server_device_seconds"] == 20.0
    assert run_cost(colocated)["rl_device_seconds"] == 8.0
    assert sum_compute([served, colocated])["device_seconds"] == 40.0


def test_a_generation_server_needs_its_devices_named():
    with pytest.raises(ConfigError, match="vllm_server_devices must be >= 1"):
        compose_run("trainer.use_vllm=true", "trainer.vllm_mode=server", "trainer.vllm_server_devices=0")
