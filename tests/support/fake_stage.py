"""A stage for the launcher tests, run as ``python -m tests.support.fake_stage OUT SECONDS CODE
WRITES [MODE]``: records what its process looks like (pid, session, parent, threads, argv,
working folder), runs a worker (MODE ``busy``) or two rank-like processes (``ranks``), sleeps,
then fails with CODE, raises (``raise``), or writes its result."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    out, seconds, code, writes = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
    mode = sys.argv[5] if len(sys.argv) > 5 else ""
    out.mkdir(parents=True, exist_ok=True)
    (out / "start").write_text(repr(time.time()))
    facts = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "sid": os.getsid(0),
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "name": __name__,
        "torch_loaded": "torch" in sys.modules,
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "marker": os.environ.get("FAKE_STAGE_MARK"),
    }
    import torch

    facts["torch_threads"] = torch.get_num_threads()
    (out / "facts.json").write_text(json.dumps(facts))
    if mode == "busy":  # a worker the stage waits for: its CPU seconds count as the stage's
        import subprocess

        burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"
        subprocess.run([sys.executable, "-c", burn], check=True)
    if mode == "ranks":  # like accelerate launch: ranks in sessions of their own
        import subprocess

        beat = (
            "import pathlib, sys, time\nwhile True:\n"
            "    pathlib.Path(sys.argv[1]).write_text(repr(time.time())); time.sleep(0.05)"
        )
        ranks = [
            subprocess.Popen([sys.executable, "-c", beat, str(out / f"rank{i}")], start_new_session=True)
            for i in range(2)
        ]
        (out / "pids").write_text(" ".join(str(r.pid) for r in ranks))
    time.sleep(seconds)
    print("working on", out.name)
    if mode == "raise":
        raise RuntimeError("this stage raised")
    if code != "0":
        print("boom: this stage cannot work", flush=True)
        sys.exit(int(code))
    if writes == "1":
        (out / "result.txt").write_text("ok")
    (out / "end").write_text(repr(time.time()))


if __name__ == "__main__":
    main()
