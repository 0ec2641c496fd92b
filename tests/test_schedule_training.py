"""A scheduled mixture in real GRPO runs on the tiny model: each step's domain quotas switch at
the configured step and the weights are logged per step, also in a run killed after a
checkpoint and resumed (the resumed process must pick the schedule up at the right step)."""

from __future__ import annotations

import json

import pytest
from test_lora import guessing_model
from test_resume import finish, kill, records, run_dir, start, wait_for_checkpoint

from rlvr.training.checkpoints import latest_complete_checkpoint

pytestmark = pytest.mark.slow

# 3:1 math to science for optimiser steps 0-3, then 1:3; four prompts a step, six steps
SCHEDULE = [
    "mixture=scheduled",
    "domains=[math,science]",
    "algo.prompts_per_step=4",
    "mixture.schedule.points=[{step:0,weights:{math:3,science:1}},{step:4,weights:{math:1,science:3}}]",
]
# (math prompts, science prompts) per 1-based step, as data_ids.jsonl numbers them
EXPECTED = {1: (3, 1), 2: (3, 1), 3: (3, 1), 4: (3, 1), 5: (1, 3), 6: (1, 3)}


def quotas(rows: list[dict]) -> dict[int, tuple[int, int]]:
    count = lambda ids, d: sum(i.startswith(f"micro-{d}-") for i in ids)  # noqa: E731
    return {r["step"]: (count(r["ids"], "math"), count(r["ids"], "science")) for r in rows}


def logged_weights(folder) -> dict[int, tuple[float, float]]:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return {
        r["step"]: (r["math/mixture_weight"], r["science/mixture_weight"]) for r in rows if "math/mixture_weight" in r
    }


def test_scheduled_quotas_switch_at_the_step_also_across_a_resume(tmp_path):
    cache = tmp_path / "cache"
    overrides = [*SCHEDULE, f"init_from={guessing_model(cache, tmp_path / 'start')}"]
    straight_root, broken_root = tmp_path / "straight", tmp_path / "broken"

    # the uninterrupted run goes beside the one to kill: tests run one at a time
    # on two cores, so each process gets a core of its own
    uninterrupted = start(straight_root, cache, *overrides)
    proc = start(broken_root, cache, *overrides)
    wait_for_checkpoint(broken_root, 2, proc)
    kill(proc)
    finish(uninterrupted, straight_root)
    straight = run_dir(straight_root)
    assert quotas(records(straight)) == EXPECTED
    weights = {s: (0.75, 0.25) if s <= 4 else (0.25, 0.75) for s in EXPECTED}
    assert logged_weights(straight) == weights

    folder = run_dir(broken_root)
    done = int(latest_complete_checkpoint(folder / "checkpoints").name.split("-")[1])
    assert done <= 4, "the run passed the switch before it could be killed"
    before = records(folder)
    finish(start(broken_root, cache, *overrides, "resume=true"), broken_root)

    after = records(folder)[len(before) :]
    assert [r["step"] for r in after] == list(range(done + 1, 7))
    assert quotas(after) == {s: q for s, q in EXPECTED.items() if s > done}
    logged = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    resumed = [r for r in logged if "loss" in r][-(6 - done) :]  # the resumed process's steps
    assert {r["step"]: (r["math/mixture_weight"], r["science/mixture_weight"]) for r in resumed} == {
        s: w for s, w in weights.items() if s > done
    }
    stitched = {r["step"]: r["ids"] for r in before if r["step"] <= done}
    stitched.update({r["step"]: r["ids"] for r in after})
    assert stitched == {r["step"]: r["ids"] for r in records(straight)}
