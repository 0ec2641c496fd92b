"""No lost work: SLURM's end-of-job signal checkpoints the current step and ends the process for
the requeue, time-based checkpoints, and (on the one-node SLURM cluster) a stage signalled
mid-run resumes from the signal's checkpoint, not the last periodic one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from transformers import TrainerControl

from rlvr.training.checkpoint_signals import REQUEST_ENV, REQUEUE_EXIT, CheckpointOnSignal
from rlvr.training.checkpoints import latest_complete_checkpoint

REPO = Path(__file__).resolve().parents[1]


def step_end(cb: CheckpointOnSignal, step: int) -> TrainerControl:
    control = TrainerControl()
    cb.on_step_end(None, SimpleNamespace(global_step=step), control)
    return control


def test_the_signal_saves_the_step_it_arrived_in_and_stops_there(monkeypatch):
    monkeypatch.delenv(REQUEST_ENV, raising=False)
    previous = signal.getsignal(signal.SIGUSR2)
    try:
        cb = CheckpointOnSignal().install()
        assert not step_end(cb, 1).should_save
        os.kill(os.getpid(), signal.SIGUSR2)
        control = step_end(cb, 2)
    finally:
        signal.signal(signal.SIGUSR2, previous)
    assert control.should_save and control.should_training_stop
    assert cb.stopped_at == 2 and cb.stopped_early(max_steps=5)
    assert not cb.stopped_early(max_steps=2)  # the last step: the run ends as usual


def test_a_request_file_asks_instead_and_leaves_the_signal_alone(tmp_path, monkeypatch):
    request = tmp_path / "stage.checkpoint-request"
    monkeypatch.setenv(REQUEST_ENV, str(request))
    previous = signal.getsignal(signal.SIGUSR2)
    cb = CheckpointOnSignal().install()
    assert signal.getsignal(signal.SIGUSR2) == previous  # helper processes keep ignoring it
    assert not step_end(cb, 1).should_save
    request.touch()
    assert step_end(cb, 2).should_training_stop and cb.stopped_at == 2


def test_save_every_min_saves_when_that_long_passed_since_the_last_save():
    now = [0.0]
    cb = CheckpointOnSignal(every_min=1, clock=lambda: now[0])
    cb.on_train_begin(None, None, None)
    now[0] = 59
    assert not step_end(cb, 1).should_save
    now[0] = 61
    control = step_end(cb, 2)
    assert control.should_save and not control.should_training_stop
    cb.on_save(None, None, None)  # periodic saves (save_steps) restart the clock too
    now[0] = 100
    assert not step_end(cb, 3).should_save
    now[0] = 122
    assert step_end(cb, 4).should_save
    assert not step_end(CheckpointOnSignal(every_min=0, clock=lambda: 1e9), 5).should_save


# A real HF Trainer on a two-parameter model; at step 3 it sends itself SLURM's signal.
TRAINER = textwrap.dedent(
    """
    import os, signal, sys, torch
    from transformers import Trainer, TrainerCallback, TrainingArguments
    from rlvr.training.checkpoints import latest_complete_checkpoint, train_from

    class Line(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2))
        def forward(self, x, y):
            return {"loss": ((x * self.w).sum(-1) - y).pow(2).mean()}

    class Signal(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step + 1 == int(sys.argv[2]):
                os.kill(os.getpid(), signal.SIGUSR2)
        def on_step_end(self, args, state, control, **kw):
            print("step", state.global_step, flush=True)

    data = [{"x": torch.tensor([1.0, float(i)]), "y": torch.tensor(float(i))} for i in range(64)]
    out = sys.argv[1]
    args = TrainingArguments(out, max_steps=8, save_steps=100, per_device_train_batch_size=2,
                             report_to=[], use_cpu=True, save_only_model=False, logging_steps=1)
    trainer = Trainer(Line(), args, train_dataset=data, callbacks=[Signal()])
    train_from(trainer, latest_complete_checkpoint(__import__("pathlib").Path(out)) and
               str(latest_complete_checkpoint(__import__("pathlib").Path(out))))
    print("done", trainer.state.global_step, flush=True)
    """
)


def test_a_trainer_sent_the_signal_checkpoints_that_step_and_exits_for_the_requeue(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    env.pop(REQUEST_ENV, None)

    def run(signal_at: int) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-c", TRAINER, str(tmp_path), str(signal_at)]
        return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)

    first = run(signal_at=3)
    assert first.returncode == REQUEUE_EXIT, first.stderr[-3000:]
    assert [line for line in first.stdout.splitlines() if line.startswith("step")] == [
        "step 1", "step 2", "step 3"
    ]  # fmt: skip
    assert latest_complete_checkpoint(tmp_path).name == "checkpoint-3"  # save_steps=100
    again = run(signal_at=0)  # the requeued job: resumes from the signal's checkpoint
    assert again.returncode == 0, again.stderr[-3000:]
    steps = [line for line in again.stdout.splitlines() if line.startswith("step")]
    assert steps == [f"step {k}" for k in range(4, 9)] and "done 8" in again.stdout
