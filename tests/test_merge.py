"""Merging tiny models: every M2RL preset runs, outputs load without NaNs, linear is the mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlvr.config import ConfigError
from rlvr.merge import MERGE_INFO, MERGEKIT_YAML, merge_models, model_folder
from rlvr.merging.presets import PRESETS, resolve
from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model

SPEC = TinyModelSpec(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    max_position_embeddings=256,
)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny matmuls on a shared 2-core box: extra OpenMP threads only spin (~300x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def perturbed_copy(base: Path, out: Path, seed: int, scale: float = 0.02) -> Path:
    """The base model with seeded Gaussian noise on every weight, saved as a model folder."""
    model = AutoModelForCausalLM.from_pretrained(base)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def tiny_family(root: Path, n: int) -> tuple[Path, list[Path]]:
    """A tiny base model and ``n`` perturbed "experts" of it."""
    base = ensure_tiny_model(root / "cache", SPEC)
    experts = [perturbed_copy(base, root / f"expert{i}", seed=i + 1) for i in range(n)]
    return base, experts


def weights(folder: Path) -> dict[str, torch.Tensor]:
    model = AutoModelForCausalLM.from_pretrained(folder)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def family(tmp_path_factory) -> tuple[Path, list[Path]]:
    return tiny_family(tmp_path_factory.mktemp("family"), 3)


def test_linear_of_two_is_the_elementwise_mean(family, tmp_path):
    base, experts = family
    out = merge_models("linear", None, experts[:2], {"weight": 1.0}, tmp_path / "avg")
    merged, a, b = weights(out), weights(experts[0]), weights(experts[1])
    assert merged.keys() == a.keys()
    for name, tensor in merged.items():
        torch.testing.assert_close(tensor, (a[name] + b[name]) / 2, rtol=1e-5, atol=1e-6)


def test_task_arithmetic_sums_task_vectors(family, tmp_path):
    base, experts = family
    out = merge_models("task_arithmetic", base, experts[:2], None, tmp_path / "ta")
    merged, b0 = weights(out), weights(base)
    a, b = weights(experts[0]), weights(experts[1])
    name = "model.layers.0.mlp.up_proj.weight"
    expected = b0[name] + (a[name] - b0[name]) + (b[name] - b0[name])
    torch.testing.assert_close(merged[name], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_merges_three_experts(family, tmp_path, preset):
    base, experts = family
    out = merge_models(preset, base, experts, None, tmp_path / preset, seed=3)
    merged, b0 = weights(out), weights(base)
    assert all(torch.isfinite(t).all() for t in merged.values())
    assert any(not torch.equal(merged[k], b0[k]) for k in merged), "merge returned the base"
    written = yaml.safe_load((out / MERGEKIT_YAML).read_text())
    assert written["merge_method"] == PRESETS[preset].method
    assert all(Path(m["model"]).is_absolute() for m in written["models"])
    info = json.loads((out / MERGE_INFO).read_text())
    assert info["name"] == info["method"] == preset and info["seconds"] > 0
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.chat_template == AutoTokenizer.from_pretrained(base).chat_template


def test_dare_is_reproducible_for_a_seed_and_varies_across_seeds(family, tmp_path):
    base, experts = family
    runs = {
        name: weights(merge_models("ta_dare", base, experts, None, tmp_path / name, seed=seed))
        for name, seed in (("a", 7), ("b", 7), ("c", 8))
    }
    key = "model.layers.1.self_attn.q_proj.weight"
    assert torch.equal(runs["a"][key], runs["b"][key])
    assert not torch.equal(runs["a"][key], runs["c"][key])


def test_presets_carry_the_m2rl_settings():
    assert resolve("ties").params["density"] == 0.2
    assert resolve("ta_dare").params == {
        "density": 0.8,
        "weight": 1.0,
        "rescale": True,
        "normalize": False,
    }
    assert resolve("task_arithmetic").params["normalize"] is False
    assert resolve("sce").params["select_topk"] == 1.0
    assert resolve("ties", {"density": 0.5}).params["density"] == 0.5


def test_conf_presets_match_the_python_presets():
    conf = Path(__file__).resolve().parents[1] / "conf" / "merge"
    for name, preset in PRESETS.items():
        data = yaml.safe_load((conf / f"{name}.yaml").read_text())
        assert resolve(data["method"], data["params"]) == preset, name


@pytest.mark.parametrize(
    ("method", "base", "message"),
    [("no_such_method", True, "unknown merge method"), ("ties", False, "needs merge.base")],
)
def test_bad_setup_fails_before_merging(family, tmp_path, method, base, message):
    b, experts = family
    with pytest.raises((ConfigError, ValueError), match=message):
        merge_models(method, b if base else None, experts, None, tmp_path / "x")


def test_model_folder_accepts_run_folders_and_rejects_others(family, tmp_path):
    _, experts = family
    run = tmp_path / "run"
    (run / "final").mkdir(parents=True)
    (run / "final" / "config.json").write_text("{}")
    assert model_folder(run) == (run / "final").resolve()
    assert model_folder(experts[0]) == experts[0].resolve()
    with pytest.raises(ConfigError, match="neither a run folder"):
        model_folder(tmp_path / "missing")


def test_lora_adapter_is_merged_into_its_base_first(family, tmp_path):
    import peft

    base, experts = family
    model = AutoModelForCausalLM.from_pretrained(base)
    lora = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    adapted = peft.get_peft_model(model, lora)
    adapted.save_pretrained(tmp_path / "adapter")  # adapter only: no config.json
    adapted.merge_and_unload().save_pretrained(tmp_path / "full")
    out = merge_models("average", None, [tmp_path / "adapter", experts[0]], None, tmp_path / "m")
    merged, full, other = weights(out), weights(tmp_path / "full"), weights(experts[0])
    key = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(full[key], weights(base)[key])
    torch.testing.assert_close(merged[key], (full[key] + other[key]) / 2, rtol=1e-5, atol=1e-6)


def test_merge_cli_runs_a_conf_preset(family, tmp_path):
    import os
    import subprocess
    import sys

    base, experts = family
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "rlvr.merge", "merge=ta_dare", f"merge.base={base}"]
    cmd += [f"merge.models=[{experts[0]},{experts[1]}]", f"merge.out_dir={out}", "logger=none"]
    cmd += [f"hydra.run.dir={tmp_path / 'hydra'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads((out / MERGE_INFO).read_text())
    assert (info["name"], info["method"]) == ("ta_dare", "dare_linear")
    assert info["params"]["density"] == 0.8 and info["seed"] == 0


def sparse_expert(base: Path, out: Path, start: float, stop: float, seed: int) -> Path:
    """The base model with seeded changes only in the slice [start, stop) of every tensor's
    elements: RL-like sparse task vectors whose overlap the test controls."""
    model = AutoModelForCausalLM.from_pretrained(base)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            flat = p.view(-1)
            lo, hi = int(start * flat.numel()), int(stop * flat.numel())
            flat[lo:hi] += 0.01 + 0.02 * torch.rand(hi - lo, generator=gen)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def test_ram_keeps_unique_changes_whole_and_averages_shared_ones(tmp_path):
    base = ensure_tiny_model(tmp_path / "cache", SPEC)
    a = sparse_expert(base, tmp_path / "a", 0.0, 0.6, seed=1)  # [0, .6)
    b = sparse_expert(base, tmp_path / "b", 0.4, 1.0, seed=2)  # [.4, 1): [.4, .6) shared
    ram = weights(merge_models("ram", base, [a, b], None, tmp_path / "ram"))
    plus = weights(merge_models("ramplus_tl", base, [a, b], None, tmp_path / "ramplus"))
    b0, wa, wb = weights(base), weights(a), weights(b)
    name = "model.layers.0.mlp.up_proj.weight"
    da, db = (wa[name] - b0[name]).view(-1), (wb[name] - b0[name]).view(-1)
    n = da.numel()
    lo, hi = int(0.4 * n), int(0.6 * n)
    expected = (da + db).clone()
    expected[lo:hi] = (da[lo:hi] + db[lo:hi]) / 2
    torch.testing.assert_close((ram[name] - b0[name]).view(-1), expected, rtol=1e-4, atol=1e-6)
    # RAM+ scales each expert's unique changes by 1 + r * min(shared / unique, alpha): here
    # shared / unique = 0.2 / 0.4 = 0.5 for both, clamped to alpha 0.2 -> 1.02
    boosted = (ram[name] - b0[name]).view(-1).clone()
    boosted[:lo] *= 1.02
    boosted[hi:] *= 1.02
    torch.testing.assert_close((plus[name] - b0[name]).view(-1), boosted, rtol=1e-4, atol=1e-6)
