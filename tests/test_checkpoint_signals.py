"""No lost work: SLURM's end-of-job signal checkpoints the current step and ends the process for
the requeue, time-based checkpoints, and (on the one-node SLURM cluster) a stage signalled
mid-run resumes from the signal's checkpoint, not the last periodic one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
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
    cb.on_step_end(None, SimpleNamespace(global_step=step, is_world_process_zero=True), control)
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


def test_in_a_submitit_job_its_own_handler_requeues_after_the_checkpoint(monkeypatch):
    """Training inside the submitit job (Hydra's launcher): submitit's handler is held back
    while the step finishes and saves, then runs (it requeues the job and exits)."""
    from rlvr.training.checkpoint_signals import exit_for_requeue

    monkeypatch.delenv(REQUEST_ENV, raising=False)
    called: list[int] = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: called.append(signum))
    try:
        cb = CheckpointOnSignal().install()
        os.kill(os.getpid(), signal.SIGUSR2)
        assert step_end(cb, 4).should_training_stop and called == []  # not yet: saving first
        cb.uninstall()
        with pytest.raises(SystemExit) as stop:
            exit_for_requeue(4, cb.previous)
        assert called == [signal.SIGUSR2] and stop.value.code == REQUEUE_EXIT
    finally:
        signal.signal(signal.SIGUSR2, previous)


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


class Line:
    """A real HF Trainer on a two-parameter model (8 steps, no periodic checkpoint in reach);
    ``signal_at``: the step during which it sends itself SLURM's end-of-job signal."""

    @staticmethod
    def train(out: Path, signal_at: int = 0) -> tuple[list[int], int]:
        """(the steps trained, the exit status); resumes from ``out``'s newest checkpoint."""
        import torch
        from transformers import Trainer, TrainerCallback, TrainingArguments

        from rlvr.training.checkpoints import train_from

        class Model(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.w = torch.nn.Parameter(torch.zeros(2))

            def forward(self, x, y):
                return {"loss": ((x * self.w).sum(-1) - y).pow(2).mean()}

        trained: list[int] = []

        class Signal(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                if state.global_step + 1 == signal_at:
                    os.kill(os.getpid(), signal.SIGUSR2)

            def on_step_end(self, args, state, control, **kw):
                trained.append(state.global_step)

        data = [{"x": torch.tensor([1.0, i]), "y": torch.tensor(float(i))} for i in range(64)]
        args = TrainingArguments(
            str(out),
            max_steps=8,
            save_steps=100,
            report_to=[],
            per_device_train_batch_size=2,
            use_cpu=True,
            save_only_model=False,
            disable_tqdm=True,
        )
        trainer = Trainer(Model(), args, train_dataset=data, callbacks=[Signal()])
        newest = latest_complete_checkpoint(out)
        try:
            train_from(trainer, newest and str(newest))
        except SystemExit as stop:
            return trained, int(stop.code)
        return trained, 0


def test_a_trainer_sent_the_signal_checkpoints_that_step_and_exits_for_the_requeue(tmp_path, monkeypatch):
    """This process gets SLURM's signal during step 3 of 8: it saves step 3 and ends with the
    requeue status; run again (the requeued job), it trains steps 4 to 8 from there."""
    monkeypatch.delenv(REQUEST_ENV, raising=False)
    previous = signal.getsignal(signal.SIGUSR2)
    try:
        assert Line.train(tmp_path, signal_at=3) == ([1, 2, 3], REQUEUE_EXIT)
        assert latest_complete_checkpoint(tmp_path).name == "checkpoint-3"  # save_steps=100
        assert Line.train(tmp_path) == ([4, 5, 6, 7, 8], 0)
    finally:
        signal.signal(signal.SIGUSR2, previous)


@pytest.mark.slow
def test_on_slurm_a_stage_signalled_mid_run_resumes_from_the_signals_checkpoint(tmp_path, slurm_cluster):
    """A GRPO stage as a study's SLURM job (``StageJob`` through submitit), with periodic
    checkpoints out of reach (save_steps > max_steps). Mid-run the job gets submitit's
    end-of-job signal, as SLURM sends it ``slurm_signal_delay_s`` before the time limit: the
    stage saves the step it was in and exits, submitit requeues the job, and the requeued job
    trains on from that checkpoint: every step once, the same number of steps in all."""
    from test_resume import OVERRIDES, guessing_model, records, run_dir

    from rlvr.study import slurm
    from rlvr.study.launchers import StageJob, SubmititLauncher
    from rlvr.study.plan import Stage

    steps = 16
    cache, out, root = tmp_path / "cache", tmp_path / "runs", tmp_path / "study"
    settings = [o for o in OVERRIDES if not o.startswith(("trainer.max_steps", "trainer.save_"))]
    argv = [
        sys.executable,
        "-m",
        "rlvr.train",
        *settings,
        "domains=[science]",
        "algo.prompts_per_step=2",
        f"init_from={guessing_model(cache, tmp_path / 'start')}",
        f"trainer.max_steps={steps}",
        "trainer.save_steps=100",
        f"paths.output_root={out}",
    ]
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RLVR_CACHE": str(cache),
        "OMP_NUM_THREADS": "1",
    }
    stage = Stage("expert", "expert", "rlvr.train", (), (), out, ())
    job = StageJob(root, stage, "hash", argv, env=env, cwd=str(REPO))
    launcher = SubmititLauncher(root, "slurm", 1, {"timeout_min": 30})
    handle = launcher.start(job, [])

    deadline = time.time() + 300
    while not (metrics := list(out.glob("*/*/metrics.jsonl"))) or not metrics[0].read_text():
        assert launcher.poll(handle) is None, job.log.read_text()[-3000:]
        assert time.time() < deadline, "the stage never trained a step"
        time.sleep(0.05)
    signalled_after = json.loads(metrics[0].read_text().splitlines()[-1])["step"]
    subprocess.run(["scancel", "--signal=USR2", str(handle.job_id)], check=True)
    while "exiting with 75" not in job.log.read_text():
        assert launcher.poll(handle) is None, job.log.read_text()[-3000:]
        assert time.time() < deadline, "the signal never reached the trainer"
        time.sleep(0.1)
    make_eligible(str(handle.job_id))
    seen = set()  # SLURM's states of the job while it is requeued and runs again
    while not handle.paths.result_pickle.exists():
        seen.update(slurm.job_states([str(handle.job_id)]).values())
        assert time.time() < deadline + 120, f"the requeued job never finished: {seen}"
        time.sleep(0.5)
    log = job.log.read_text()
    assert handle.result() == 0, log[-3000:]

    folder = run_dir(out)
    saved = int(re.search(r"checkpoint-(\d+) saved; exiting with 75", log).group(1))
    assert signalled_after <= saved < steps  # the step it was in (or the next, if just ended)
    assert f"resuming from {folder / 'checkpoints' / f'checkpoint-{saved}'}" in log
    assert [r["step"] for r in records(folder)] == list(range(1, steps + 1))  # each once
    entries = [json.loads(line) for line in (folder / "metrics.jsonl").open()]
    logged = [e["step"] for e in entries if "train_runtime" not in e]  # not runs' summaries
    assert logged[saved:] == list(range(saved + 1, steps + 1)), logged  # resumed at saved + 1
    assert json.loads((folder / "summary.json").read_text())["rl"]["steps"] == steps
    print(f"signal after step {signalled_after}: checkpoint-{saved}")


def make_eligible(job: str) -> None:
    """SLURM holds a requeued job back (its launch credential's 120 s): once it is pending
    again and its last run has left the node (starting it sooner fails it), start it at once,
    as a busy cluster would have started it later anyway."""
    deadline = time.time() + 60
    while time.time() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.strip()
        node = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        if state == "PENDING" and node.stdout.strip() == "idle":  # the last run has left it
            subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
            return
        time.sleep(0.2)  # still running or completing
    raise AssertionError(f"job {job} never became pending again")
