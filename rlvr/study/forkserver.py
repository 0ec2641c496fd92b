"""The stage server: imports torch, transformers and TRL once, then forks each stage from there.

Every stage of a local study is ``python -m <entry> ...``, and each paid 5-10 s of imports
before doing anything (about a hundred stages in ``tiny_study``). The server is started once
per study; for each stage it forks a child that is the stage's own process, as before: its own
session, its own log on stdout and stderr, killed with the server (and the server with the
driver), the stage's environment and working folder, ``runpy`` running the entry module as
``__main__`` exactly as ``python -m`` does, and its exit status and CPU seconds reported back.
The driver's side, and which stages start cold instead, is ``rlvr/study/warm_start.py``.

Fork is safe here because the server never runs torch work or starts a thread: an OpenMP
pool forked mid-use would hang the child. The server checks it is single-threaded after its
imports and refuses to fork otherwise.

Protocol: JSON lines. Server to driver: ``{"ready": ...}`` once imported, ``{"id", "pid"}``
per started stage, ``{"pid", "returncode", "cpu_s"}`` per ended one. Driver to server:
``{"id", "module", "args", "env", "cwd", "log"}``.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import sys
import threading
import time

from rlvr.study.stage_process import die_with_parent

# what the stages import before their own work; each optional (a missing extra is skipped)
PRELOAD = (
    "torch",
    "numpy",
    "transformers",
    "datasets",
    "accelerate",
    "peft",
    "trl",
    "hydra",
    "omegaconf",
    "safetensors",
    "psutil",
    "mergekit.merge",
    "mergekit.config",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.llama.modeling_llama",
    "rlvr.runs.cli",
    "rlvr.config",
    "rlvr.training.grpo",
    "rlvr.training.lean_sft",
    "rlvr.evaluation.sampling",
    "rlvr.rewards.bridge",
    "verifiers",
    "tasks",
)


def _send(fd: int, message: dict) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _preload() -> list[str]:
    loaded = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001  (an optional extra, or a module that moved)
            continue
    return loaded


def _run_child(request: dict, closing: list[int]) -> None:
    """In the forked child: become the stage's process, run its entry module, exit."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        for fd in closing:
            os.close(fd)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.write(1, f"[rlvr.study] warm start: forked from the stage server {os.getppid()}\n".encode())
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        sys.path[0] = os.getcwd()  # python -m puts the working folder first
        os.environ.clear()
        os.environ.update(request["env"])
        code = _run_module(request["module"], request["args"])
    finally:
        _exit(code)


def _run_module(module: str, args: list[str]) -> int:
    import runpy
    import traceback

    sys.argv = [module, *args]  # runpy puts the module's file first, as python -m does
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return int(done.code or 0)
        sys.stderr.write(f"{done.code}\n")
        return 1
    except BaseException:  # noqa: BLE001  (what an uncaught exception does to python -m)
        traceback.print_exc()
        return 1


def _exit(code: int) -> None:
    """What the interpreter does on exit (atexit handlers: W&B, multiprocessing, logging),
    then leave without unwinding into the server's loop."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def serve() -> None:
    """The server's loop: read requests, fork stages, report their ends."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver stops the stages, not Ctrl-C
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints of imported modules go to the server's log, not the protocol
    started = time.monotonic()
    loaded = _preload()
    threads = threading.active_count()
    _send(
        replies,
        {
            "ready": threads == 1,
            "threads": threads,
            "preloaded": loaded,
            "seconds": round(time.monotonic() - started, 2),
        },
    )
    buffer = b""
    children: set[int] = set()
    while True:
        readable, _, _ = select.select([requests], [], [], 0.1)
        if readable:
            chunk = os.read(requests, 65536)
            if not chunk:  # the driver closed its end: the study is over
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                sys.stdout.flush()  # nothing buffered here may reach a stage's log
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _run_child(request, [requests, replies])
                children.add(pid)
                _send(replies, {"id": request["id"], "pid": pid})
        while children:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            _send(
                replies,
                {
                    "pid": pid,
                    "returncode": os.waitstatus_to_exitcode(status),
                    "cpu_s": usage.ru_utime + usage.ru_stime,
                },
            )


if __name__ == "__main__":
    serve()
