"""Task-vector geometry on constructed task vectors, the projection's properties, and
streamed = in-memory on the tiny models."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import save_model

from rlvr.analysis import reference
from rlvr.analysis.geometry import Geometry, cosine_table
from rlvr.analysis.inventory import ModelSpec, resolve
from rlvr.analysis.projection import Projection, matrix
from rlvr.analysis.registry import weight_pass

A, B = "model.layers.0.mlp.up_proj.weight", "model.layers.0.self_attn.v_proj.weight"
# sd of a projected cosine at 0 is about 1/sqrt(256) = 0.0625: 4 sd
PROJECTED_TOLERANCE = 4 / math.sqrt(256)


def geometry(tmp_path, base, deltas, chunk_elements=1 << 21):
    """Models ``base + delta`` (label -> tensors) saved and streamed; the geometry result."""
    sft = save_model(tmp_path / "sft", base)
    specs = [
        ModelSpec(label, "expert", save_model(tmp_path / label, {n: base[n] + d[n] for n in base}))
        for label, d in deltas.items()
    ]
    geo = Geometry(specs)
    weight_pass([geo], sft, specs, chunk_elements)
    return geo.result()


def _random(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {A: torch.randn(300, 100, generator=g), B: torch.randn(100, 50, generator=g)}


def test_orthogonal_task_vectors_have_cosine_0_exactly_and_about_0_projected(tmp_path):
    base = _random(0)
    u, v = _random(1), _random(2)
    # v minus its component along u: orthogonal to u across both tensors together
    dot = sum((u[n] * v[n]).sum() for n in u) / sum((u[n] ** 2).sum() for n in u)
    w = {n: v[n] - dot * u[n] for n in u}
    disjoint = {A: torch.zeros(300, 100), B: u[B]}  # support disjoint from ...
    only_a = {A: u[A], B: torch.zeros(100, 50)}  # ... this one's
    r = geometry(tmp_path, base, {"u": u, "w": w, "b_only": disjoint, "a_only": only_a}, chunk_elements=7000)
    exact, approx = r.exact(), r.approx()
    assert exact[0, 1] == pytest.approx(0.0, abs=1e-5)
    assert exact[2, 3] == pytest.approx(0.0, abs=1e-6)
    assert abs(approx[0, 1]) < PROJECTED_TOLERANCE
    assert abs(approx[2, 3]) < PROJECTED_TOLERANCE


def test_identical_opposite_and_half_aligned_task_vectors(tmp_path):
    base, u, v = _random(0), _random(1), _random(2)
    dot = sum((u[n] * v[n]).sum() for n in u) / sum((u[n] ** 2).sum() for n in u)
    ortho = {n: v[n] - dot * u[n] for n in u}
    scale = math.sqrt(sum((u[n] ** 2).sum() for n in u) / sum((ortho[n] ** 2).sum() for n in u))
    deltas = {
        "u": u,
        "twice_u": {n: 2 * u[n] for n in u},
        "minus_u": {n: -u[n] for n in u},
        "u_plus_ortho": {n: u[n] + scale * ortho[n] for n in u},  # 45 degrees from u
        "sft_copy": {n: torch.zeros_like(u[n]) for n in u},
    }
    r = geometry(tmp_path, base, deltas)
    exact, approx = r.exact(), r.approx()
    assert exact[0, 1] == pytest.approx(1.0, abs=1e-6) and approx[0, 1] == pytest.approx(1.0)
    assert exact[0, 2] == pytest.approx(-1.0, abs=1e-6) and approx[0, 2] == pytest.approx(-1.0)
    assert exact[0, 3] == pytest.approx(1 / math.sqrt(2), abs=1e-5)
    assert abs(approx[0, 3] - 1 / math.sqrt(2)) < PROJECTED_TOLERANCE
    assert math.isnan(exact[0, 4]) and math.isnan(approx[0, 4])  # no task vector: undefined
    rows = {(a, b): (e, p) for a, b, e, p, _ in cosine_table(r, 256).rows}
    assert rows[("u", "sft_copy")] == (None, None)


def test_the_projection_is_orthogonal_and_does_not_depend_on_slicing():
    sizes = [("x", 3000), ("y", 700), ("z", 1)]
    p = matrix(sizes, 64, seed=3)
    assert torch.allclose(p @ p.T, torch.eye(64, dtype=torch.float64), atol=1e-12)
    vectors = torch.randn(2, 3701)
    whole = Projection(2, 64, seed=3)
    sliced = Projection(2, 64, seed=3)
    start = 0
    for name, size in sizes:
        whole.update(name, 0, vectors[:, start : start + size])
        for lo in range(0, size, 333):  # slices that straddle the 2^16-element seed blocks
            hi = min(size, lo + 333)
            sliced.update(name, lo, vectors[:, start + lo : start + hi])
        start += size
    expected = (p @ vectors.double().T).T
    assert torch.allclose(whole.result(), expected, atol=1e-5)
    assert torch.allclose(sliced.result(), expected, atol=1e-5)
    assert not torch.allclose(Projection(2, 64, seed=4).result(), expected)


def test_projected_cosines_of_orthogonal_vectors_spread_as_the_docstring_says():
    g = torch.Generator().manual_seed(0)
    values = []
    for seed in range(40):
        u, v = torch.randn(2, 20_000, generator=g).double()
        v = v - (u @ v) / (u @ u) * u
        proj = Projection(2, 256, seed=seed)
        proj.update("t", 0, torch.stack([u, v]).float())
        y = proj.result()
        values.append(float(y[0] @ y[1] / (y[0].norm() * y[1].norm())))
    sd = torch.tensor(values).std().item()
    assert 0.03 < sd < 0.1  # sqrt(1 / 256) = 0.0625


def test_streamed_geometry_equals_the_in_memory_computation_on_the_tiny_models(tiny_study):
    sft, models = resolve(tiny_study, None, [])
    geo = Geometry(models)
    weight_pass([geo], sft, models, chunk_elements=100_000)
    ref = reference.analyse(sft, [m.path for m in models])
    r = geo.result()
    assert torch.allclose(r.gram, ref.gram, rtol=1e-5)
    assert torch.allclose(r.projected, ref.projected, rtol=1e-4, atol=1e-6)
    # the merge is the experts' mean: its task vector lies between theirs
    exact = r.exact()
    assert exact[0, 3] > 0.5 and exact[1, 3] > 0.5 and abs(exact[0, 1]) < 0.05
