"""Reading W&B runs back from their offline transaction logs (rlvr.tracking.readback)."""

from __future__ import annotations

import pytest

from rlvr.tracking.readback import BLOCK, TransactionLogError, find_logs, payloads, read_run


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    """A real offline W&B run: identity, config, three history rows, a table, a summary, and a
    value longer than a log block (its record spans blocks in fragments)."""
    import os

    import wandb

    folder = tmp_path_factory.mktemp("wandb")
    saved = os.environ.get("WANDB_MODE")
    os.environ["WANDB_MODE"] = "offline"  # the test session disables W&B
    try:
        run = wandb.init(
            project="rlvr-test",
            id="stage0abc",
            name="expert-math-seed0",
            group="study-1",
            job_type="expert",
            tags=["math", "seed0"],
            config={"lr": 1e-5},
            dir=str(folder),
        )
        for step in range(3):
            run.log({"train/math/reward": 0.25 * step, "long": "x" * (2 * BLOCK)}, step=step)
        run.log({"records": wandb.Table(columns=["id", "ok"], data=[["a", True]])}, step=3)
        run.summary["eval/math/avg_at_k"] = 0.5
        run.finish()
    finally:
        if saved is None:
            os.environ.pop("WANDB_MODE")
        else:
            os.environ["WANDB_MODE"] = saved
    (log,) = find_logs(folder)
    return log


def test_a_run_reads_back_whole(offline_run):
    run = read_run(offline_run)
    assert run.run["id"] == "stage0abc" and run.run["name"] == "expert-math-seed0"
    assert (run.run["group"], run.run["job_type"]) == ("study-1", "expert")
    assert run.run["tags"] == ["math", "seed0"]
    assert run.config["lr"] == 1e-5
    assert run.steps() == [0, 1, 2, 3]
    assert [row.get("train/math/reward") for row in run.history[:3]] == [0, 0.25, 0.5]
    assert all(len(row["long"]) == 2 * BLOCK for row in run.history[:3])  # fragments joined
    assert run.history[3]["records/_type"] == "table-file"
    assert run.summary["eval/math/avg_at_k"] == 0.5


def test_a_corrupt_byte_or_a_foreign_file_fails_with_its_place(offline_run, tmp_path):
    data = bytearray(offline_run.read_bytes())
    data[200] ^= 0xFF
    broken = tmp_path / "run-x.wandb"
    broken.write_bytes(bytes(data))
    with pytest.raises(TransactionLogError, match="corrupt record at byte"):
        list(payloads(broken))
    foreign = tmp_path / "run-y.wandb"
    foreign.write_text("not a log")
    with pytest.raises(TransactionLogError, match="not a W&B transaction log"):
        read_run(foreign)
