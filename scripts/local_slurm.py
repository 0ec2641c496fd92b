"""A one-node SLURM cluster in a folder: try the study's SLURM launcher on one machine.

    apt-get install slurm-wlm munge                 # Debian's packages (root)
    python scripts/local_slurm.py start /tmp/slurm  # prints: export SLURM_CONF=/tmp/slurm/slurm.conf
    export SLURM_CONF=/tmp/slurm/slurm.conf
    python -m rlvr.study experiment=tiny_study study.launcher=slurm
    python scripts/local_slurm.py stop /tmp/slurm   # stops exactly the daemons it started

Everything lives in the folder: a fresh munge key, ``slurm.conf`` (this host as the only node,
all its cores, linuxproc process tracking, no accounting database), the controller's state,
the node's spool, the logs and the daemons' process ids. No system file is touched and no
other SLURM or munge on the machine is disturbed (own socket, own free ports). Without an
accounting database ``sacct`` has nothing to show; finished jobs stay visible to ``squeue -t
all`` and ``scontrol show job`` for a day (``MinJobAge``). The tests start one per session.
"""

from __future__ import annotations

import getpass
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing_programs() -> list[str]:
    return [p for p in (*DAEMONS, "sbatch", "squeue", "scancel") if not _which(p)]


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 * 9 // 10  # leave the system a tenth
    return 1024


def slurm_conf(folder: Path, node: str, ports: list[int], cpus: int, memory_mb: int) -> str:
    user = getpass.getuser()
    return "\n".join(
        [
            "ClusterName=rlvrlocal",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # a requeued job may start again once its launch credential expires (default 120 s)
            f"AuthInfo=socket={folder / 'munge.socket'},cred_expire=10",
            f"SlurmctldPort={ports[0]}",
            f"SlurmdPort={ports[1]}",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1",
            "ReturnToService=2",
            "MinJobAge=86400",
            "KillWait=5",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName=local Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def start(folder: Path, timeout_s: float = 60) -> dict[str, str]:
    """Write the cluster's files, start its three daemons, wait for the node to take jobs;
    returns the environment a client needs (``SLURM_CONF``)."""
    if missing := missing_programs():
        raise RuntimeError(f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)")
    folder = folder.resolve()
    for sub in ("state", "spool", "log"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    key = folder / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    node = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, node, _free_ports(2), os.cpu_count() or 1, _memory_mb()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    commands = {
        "munged": [
            _which("munged"),
            "--foreground",
            "--force",
            f"--socket={folder / 'munge.socket'}",
            f"--key-file={key}",
            f"--log-file={folder / 'log' / 'munged.log'}",
            f"--pid-file={folder / 'munged.pid'}",
            f"--seed-file={folder / 'munged.seed'}",
        ],
        "slurmctld": [_which("slurmctld"), "-D", "-c", "-f", str(conf)],
        "slurmd": [_which("slurmd"), "-D", "-f", str(conf), "-N", node],
    }
    pids = {}
    for name, argv in commands.items():
        with (folder / "log" / f"{name}.out").open("a") as out:
            proc = subprocess.Popen(
                argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        pids[name] = proc.pid
        (folder / "pids.json").write_text(json.dumps(pids))
        if name == "munged":
            _wait(lambda: (folder / "munge.socket").exists(), timeout_s, folder, "munged")
    _wait(lambda: _node_state(env) in ("idle", "mixed", "allocated"), timeout_s, folder, "slurmd")
    return {"SLURM_CONF": str(conf)}


def _node_state(env: dict[str, str]) -> str:
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
    return done.stdout.strip().rstrip("*~#")


def _wait(ready, timeout_s: float, folder: Path, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            stop(folder)
            raise RuntimeError(f"{what} did not come up in {timeout_s:.0f} s: see {folder / 'log'}")
        time.sleep(0.2)


def stop(folder: Path, grace_s: float = 10) -> None:
    """Cancel the cluster's jobs, then SIGTERM the daemons this folder started (their ids in
    ``pids.json``), SIGKILL after the grace; a process id that now names another program is
    left alone."""
    folder = folder.resolve()
    try:
        pids = json.loads((folder / "pids.json").read_text())
    except (OSError, ValueError):
        return
    ours = [pid for name, pid in pids.items() if _runs(pid, name)]
    _cancel_jobs(folder, grace_s)  # first the jobs: their steps would outlive the daemons
    for pid in reversed(ours):
        _kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in ours:
        _kill(pid, signal.SIGKILL)
    (folder / "pids.json").unlink(missing_ok=True)


def _cancel_jobs(folder: Path, grace_s: float) -> None:
    """scancel every job of this cluster and wait (up to the grace) until none is left."""
    env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    subprocess.run(["scancel", "--quiet", "--user", getpass.getuser()], env=env, capture_output=True, timeout=30)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        queued = subprocess.run(
            ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=30
        ).stdout.split()
        if not queued:
            return
        time.sleep(0.2)


def _runs(pid: int, name: str) -> bool:
    try:
        return name in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__)
        return 2
    folder = Path(argv[1])
    if argv[0] == "stop":
        stop(folder)
        return 0
    env = start(folder)
    print(f"export SLURM_CONF={env['SLURM_CONF']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
