"""The resource plan against measured memory: two training steps on CPU, built from config,
peak bytes in use by the allocator within 25% of the plan (scripts/calibrate_plan.py)."""

from __future__ import annotations

import pytest
from script_loader import load_script

pytestmark = pytest.mark.slow
calibrate = load_script("calibrate_plan")


@pytest.mark.parametrize("case", ["tiny-512", "smollm2-256"])
def test_predicted_training_memory_is_within_a_quarter_of_the_measured_peak(case):
    row = calibrate.run_case(case)
    assert 0.75 <= row["ratio"] <= 1.25, row
