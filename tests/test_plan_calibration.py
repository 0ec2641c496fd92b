"""The resource plan against measured memory: two training steps on CPU, built from config,
peak bytes in use by the allocator; the plan never under-predicts a case and errs high by at
most 25% (scripts/calibrate_plan.py): float32, single-process bf16 autocast on padded rows
(sdpa's 4D mask), and two gloo ranks under FSDP2 with bf16 mixed precision (float32 masters,
the root unit)."""

from __future__ import annotations

import pytest
from script_loader import load_script

pytestmark = pytest.mark.slow
calibrate = load_script("calibrate_plan")


@pytest.mark.parametrize("case", ["tiny-512", "smollm2-256", "tiny-256-autocast-padded", "qwen2-fsdp2-128"])
def test_the_plan_never_under_predicts_and_errs_high_by_at_most_a_quarter(case):
    row = calibrate.run_case(case)
    print(
        f"{case}: predicted {row['predicted'] / 2**30:.3f} GiB, measured "
        f"{row['measured'] / 2**30:.3f} GiB, ratio {row['ratio']:.3f}"
    )
    assert 1.0 <= row["ratio"] <= 1.25, row


def test_fsdp2_mixed_precision_is_planned_at_sixteen_bytes_a_trainable_parameter():
    from rlvr.planning.memory import memory
    from rlvr.planning.shapes import shape_from_config

    case = calibrate.CASES["qwen2-fsdp2-128"]
    shape = shape_from_config(case.config, case.name)
    parts = memory(shape, calibrate.workload(case), None)
    states = parts["weights"] + parts["gradients"] + parts["optimizer"]
    assert states == 16 * shape.parameters() / 2  # float32 masters, sharded over two ranks
    assert parts["root unit"] == 2 * 2 * (shape.vocab_size * shape.hidden_size + shape.hidden_size)
