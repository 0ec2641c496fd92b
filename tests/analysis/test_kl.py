"""KL of a model from the SFT model on sampled held-out completions, with the embedded tiny model:
a copy of SFT gives exactly 0, a perturbed one more; the table puts it beside the score change."""

from __future__ import annotations

import shutil

import pytest
import torch
from conftest import write_eval
from safetensors.torch import load_file, save_file

from rlvr.analysis.evaluations import load as load_evaluations
from rlvr.analysis.kl import PolicyKL, load, model_kl
from rlvr.config import ConfigError, RunConfig
from rlvr.evaluation.benchmarks import load_benchmark
from rlvr.models.loading import load_tokenizer


def _run() -> RunConfig:
    run = RunConfig()
    run.analyze.kl.prompts, run.analyze.kl.samples, run.analyze.kl.max_new_tokens = 3, 2, 12
    run.eval.max_prompts = 4
    return run


@pytest.fixture
def models(tmp_path, tiny_model_dir):
    """The tiny model as SFT, an exact copy of it, and a copy with one weight matrix moved."""
    same = shutil.copytree(tiny_model_dir, tmp_path / "same")
    moved = shutil.copytree(tiny_model_dir, tmp_path / "moved")
    weights = load_file(str(moved / "model.safetensors"))
    name = next(n for n in weights if n.endswith("mlp.down_proj.weight"))
    weights[name] = weights[name] + 0.05 * torch.randn(weights[name].shape, generator=torch.Generator().manual_seed(0))
    save_file(weights, str(moved / "model.safetensors"), metadata={"format": "pt"})
    return tiny_model_dir, same, moved


def test_a_model_identical_to_sft_is_at_kl_zero_exactly(models):
    sft_dir, same_dir, moved_dir = models
    run = _run()
    sft, tokenizer = load(str(sft_dir), run), load_tokenizer(str(sft_dir), run.model)
    rows = {
        "math": load_benchmark("micro_math", 3, "", 0),
        "code": load_benchmark("micro_code", 2, "", 0),
    }
    same = model_kl(load(str(same_dir), run), sft, tokenizer, rows, run)
    assert {d: v["kl"] for d, v in same.items()} == {"math": 0.0, "code": 0.0}
    assert all(v["tokens"] > 0 for v in same.values())  # something was sampled and scored
    moved = model_kl(load(str(moved_dir), run), sft, tokenizer, rows, run)
    assert all(v["kl"] > 1e-6 for v in moved.values())


def test_the_table_puts_kl_beside_the_change_in_score(tmp_path, models):
    sft_dir, same_dir, moved_dir = models
    items = {"micro-a": [0.0, 1.0]}
    write_eval(tmp_path, "sft", "micro_math", items, str(sft_dir))
    write_eval(tmp_path, "math-seed0", "micro_math", {"micro-a": [1.0, 1.0]}, str(same_dir))
    write_eval(tmp_path, "ties-seed0", "micro_math", {"micro-a": [0.0, 0.0]}, str(moved_dir))
    run = _run()
    out = PolicyKL(run, load_evaluations(tmp_path, "kl")).write(tmp_path / "analysis")
    rows = {r[0]: r for r in out.tables[0].rows}
    assert rows["math-seed0"][2] == 0.0 and rows["math-seed0"][4] == pytest.approx(50.0)
    assert rows["ties-seed0"][2] > 0.0 and rows["ties-seed0"][4] == pytest.approx(-50.0)
    assert rows["ties-seed0"][3] > 0  # tokens scored
    assert out.images[0].read_bytes()[:4] == b"\x89PNG"


def test_impossible_settings_fail_before_any_model_loads(tmp_path):
    write_eval(tmp_path, "sft", "micro_math", {"micro-a": [0.0]}, str(tmp_path / "no-model"))
    run = _run()
    run.analyze.kl.samples = 0
    with pytest.raises(ConfigError, match="analyze.kl.prompts, samples"):
        PolicyKL(run, load_evaluations(tmp_path, "kl"))
