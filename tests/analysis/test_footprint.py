"""Update footprint on constructed models whose answer is known, and streamed = in-memory."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import save_model

from rlvr.analysis import reference
from rlvr.analysis.footprint import Footprint, changed_mask, module_group, random_jaccard
from rlvr.analysis.inventory import ModelSpec, resolve
from rlvr.analysis.registry import weight_pass

NAME = "model.layers.0.mlp.up_proj.weight"


def footprint(tmp_path, base, models, chunk_elements=1 << 21, eta=1e-3):
    """Save ``base`` and ``models`` (label -> tensors) as model folders, stream, return result."""
    sft = save_model(tmp_path / "sft", base, shards=2)
    specs = [ModelSpec(label, "expert", save_model(tmp_path / label, t)) for label, t in models.items()]
    fp = Footprint(specs, eta)
    weight_pass([fp], sft, specs, chunk_elements)
    return fp.result()


def test_disjoint_masks_give_jaccard_0_and_identical_ones_1(tmp_path):
    base = {NAME: torch.ones(40, 25)}
    first, second = torch.zeros(40, 25), torch.zeros(40, 25)
    first[:20], second[20:] = 0.5, 0.5
    models = {
        "a": {NAME: base[NAME] + first},
        "b": {NAME: base[NAME] + second},  # the other half: disjoint from a
        "c": {NAME: base[NAME] - 3 * first},  # a's support, other values
    }
    r = footprint(tmp_path, base, models, chunk_elements=100)  # ten slices
    jac = r.jaccard()
    assert jac[0, 1] == 0 and jac[0, 2] == 1 and jac[1, 2] == 0
    assert r.density().tolist() == [0.5, 0.5, 0.5]
    assert r.random_jaccard()[0, 1] == pytest.approx(1 / 3)  # 0.25 / (0.5 + 0.5 - 0.25)


@pytest.mark.parametrize(
    ("w_sft", "w", "eta", "changed"),
    [
        (1.0, 1.0005, 1e-3, False),  # 5e-4 relative: bf16-level noise
        (1.0, 1.002, 1e-3, True),
        (-2.0, -2.0041, 1e-3, True),
        (0.0, 1e-9, 1e-3, True),  # from zero, any move is relatively large
        (0.0, 0.0, 1e-3, False),
        (3.0, 3.0, 1e-3, False),
        # relative to the larger magnitude: 0.105 > 0.1 * 1.0 but not > 0.1 * 1.105
        (1.0, 1.105, 0.1, False),
        (1.105, 1.0, 0.1, False),
        (1.0, 1.12, 0.1, True),
    ],
)
def test_the_papers_rule_is_relative_to_the_larger_magnitude(w_sft, w, eta, changed):
    base, models = torch.tensor([w_sft]), torch.tensor([[w]])
    assert bool(changed_mask(base, models, models - base, eta)[0, 0]) is changed


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("model.layers.3.self_attn.q_proj.weight", "attention"),
        ("model.layers.3.self_attn.o_proj.bias", "attention"),
        ("model.layers.3.self_attn.q_norm.weight", "norms"),  # Qwen3: a norm inside attention
        ("model.layers.3.mlp.gate_proj.weight", "mlp"),
        ("transformer.h.0.mlp.c_fc.weight", "mlp"),
        ("model.embed_tokens.weight", "embeddings"),
        ("lm_head.weight", "embeddings"),
        ("transformer.wpe.weight", "embeddings"),
        ("model.layers.3.post_attention_layernorm.weight", "norms"),
        ("transformer.ln_f.weight", "norms"),
        ("model.norm.weight", "norms"),
        ("score.weight", "other"),
    ],
)
def test_module_groups_come_from_parameter_names(name, group):
    assert module_group(name) == group


def test_per_module_breakdown(tmp_path):
    attn, mlp, norm = "model.layers.0.self_attn.k_proj.weight", NAME, "model.norm.weight"
    base = {attn: torch.ones(8, 8), mlp: torch.ones(16, 8), norm: torch.ones(8)}
    moved = dict(base, **{mlp: base[mlp] * 1.5})  # every MLP weight, nothing else
    half = dict(base, **{attn: torch.cat([torch.ones(4, 8) * 2, torch.ones(4, 8)])})
    r = footprint(tmp_path, base, {"mlp_only": moved, "half_attention": half})
    assert r.sizes == {"attention": 64, "mlp": 128, "norms": 8}
    assert r.changed["mlp"].tolist() == [128, 0]
    assert r.changed["attention"].tolist() == [0, 32]
    assert r.changed["norms"].tolist() == [0, 0]
    assert r.density().tolist() == [128 / 200, 32 / 200]


def test_independent_random_masks_overlap_as_the_formula_says(tmp_path):
    g = torch.Generator().manual_seed(0)
    base = {NAME: torch.ones(1000, 200)}
    models = {
        f"m{i}": {NAME: torch.where(torch.rand(1000, 200, generator=g) < p, 2.0, 1.0)}
        for i, p in enumerate((0.3, 0.1))
    }
    r = footprint(tmp_path, base, models)
    p, q = r.density().tolist()
    assert r.jaccard()[0, 1] == pytest.approx(random_jaccard(p, q), abs=0.005)
    assert random_jaccard(0.3, 0.1) == pytest.approx(0.03 / 0.37)
    assert math.isnan(random_jaccard(0.0, 0.0))


def test_streamed_counts_equal_the_in_memory_computation_on_the_tiny_models(tiny_study):
    sft, models = resolve(tiny_study, None, [])
    assert [m.label for m in models] == ["math-seed0", "code-seed0", "mixed-seed0", "ties-seed0"]
    fp = Footprint(models)
    weight_pass([fp], sft, models, chunk_elements=100_000)  # many slices per tensor
    ref = reference.analyse(sft, [m.path for m in models])
    r = fp.result()
    assert torch.equal(r.overlap, ref.overlap)
    assert r.changed.keys() == ref.changed.keys() == {"attention", "mlp", "embeddings", "norms"}
    for group, counts in ref.changed.items():
        assert torch.equal(r.changed[group], counts), group
    assert 0.25 < float(r.density()[0]) < 0.35  # the math expert moved ~30% of its weights
