"""Backend selection and the isolation every backend promises, checked on the real sandbox."""

from __future__ import annotations

import os

import _requirements as required
import pytest

from verifiers.sandbox import (
    OK,
    OUTPUT_LIMIT,
    TIMEOUT,
    Limits,
    SandboxUnavailableError,
    available_backends,
    select_backend,
)
from verifiers.sandbox.seccomp_filter import supported as seccomp_supported

SHORT = Limits(cpu_s=2, wall_s=2, memory_mb=256)


def run(box, source: str, stdin: str = "", limits: Limits = SHORT):
    return box.run(source, stdin, limits)


def test_unknown_backend_names_the_choices():
    with pytest.raises(SandboxUnavailableError, match="valid choices: auto, nsjail, bwrap"):
        select_backend("docker")


def test_auto_picks_the_strongest_available():
    working = [name for name, reason in available_backends().items() if reason is None]
    if not working:  # rlimit needs no tool: none working is a broken sandbox
        required.missing(f"a working sandbox backend ({available_backends()})")
    assert select_backend("auto").name == working[0]


def test_unavailable_backend_is_a_clear_error():
    broken = [name for name, reason in available_backends().items() if reason is not None]
    if not broken:
        pytest.skip("every backend works on this machine")
    with pytest.raises(SandboxUnavailableError, match="unavailable here.*Available:"):
        select_backend(broken[0])


def test_stdin_stdout_exit_code(box):
    result = run(box, "import sys\nprint(sys.stdin.read().upper())\nsys.exit(3)", stdin="hi")
    assert (result.status, result.stdout, result.exit_code) == (OK, "HI\n", 3)


def test_large_stdin_arrives_whole(box):
    result = run(box, "import sys\nprint(len(sys.stdin.read()))", stdin="x" * (3 << 20))
    assert result.stdout == f"{3 << 20}\n"


def test_secret_on_fd_4_and_code_runs_in_the_prelude_namespace(box):
    prelude = (("lib.py", "def shout(text):\n    return text.upper()\n"),)
    source = "import os\nos.lseek(4, 0, 0)\nprint(shout(os.read(4, 100).decode()))"
    result = box.run(source, "", SHORT, secret=b"psst", prelude=prelude)
    assert (result.status, result.stdout) == (OK, "PSST\n"), result
    again = box.run("print(shout('once'))", "", SHORT, prelude=prelude)  # sent by key now
    assert again.stdout == "ONCE\n", again


def test_no_secret_no_fd_4(box):
    source = "import os\ntry:\n    os.fstat(4)\nexcept OSError:\n    print('closed')"
    assert run(box, source).stdout == "closed\n"


def test_environment_is_scrubbed(box, monkeypatch):
    monkeypatch.setenv("RLVR_HOST_ONLY", "visible")
    result = run(box, "import os\nprint(sorted(os.environ))")
    assert "RLVR_HOST_ONLY" not in result.stdout
    assert set(eval(result.stdout)) <= {"HOME", "LANG", "PATH", "PYTHONHASHSEED", "TMPDIR"}


def test_code_never_runs_as_root(box):
    if os.geteuid() != 0:
        pytest.skip("not started as root: the code runs as the caller")
    result = run(box, "import os\nprint(os.getuid(), os.geteuid())")
    assert result.stdout.split() and "0" not in result.stdout.split(), result


def test_system_view_is_read_only(box):
    source = (
        "import sys\ntry:\n    open(sys.executable, 'ab')\n    print('writable')\n"
        "except OSError as e:\n    print(type(e).__name__)"
    )
    assert run(box, source).stdout.strip() in {"PermissionError", "OSError"}


def test_temp_dir_is_private_and_removed(box):
    first = run(box, "import os\nopen('mark', 'w').write('x')\nprint(os.getcwd())")
    second = run(box, f"import os\nprint(os.path.exists({first.stdout.strip()!r}), os.listdir('.'))")
    assert second.stdout.strip() == "False []"


def test_network_socket_denied(box):
    source = (
        "import socket\ntry:\n    socket.socket(socket.AF_INET).connect(('127.0.0.1', 9))\n"
        "except OSError as e:\n    print(type(e).__name__)"
    )
    assert run(box, source).stdout.strip() in {
        "PermissionError",
        "ConnectionRefusedError",
        "OSError",
    }
    if not seccomp_supported():
        pytest.skip("seccomp not supported on this architecture")
    assert run(box, source).stdout.strip() == "PermissionError"


def test_wall_clock_kills_the_tree(box):
    result = run(box, "import time\ntime.sleep(120)", limits=Limits(wall_s=0.5, cpu_s=1))
    assert result.status == TIMEOUT and result.wall_s < 30  # cut short, however loaded the host


def test_output_cap(box):
    result = run(box, "print('x' * 10**6)", limits=Limits(output_bytes=1000, wall_s=2, cpu_s=2))
    assert result.status == OUTPUT_LIMIT


def test_file_size_cap(box):
    source = (
        "try:\n    open('big', 'wb').write(b'x' * 3 * 2**20)\n    print('wrote')\n"
        "except OSError as e:\n    print(type(e).__name__)"
    )
    result = run(box, source, limits=Limits(fsize_mb=1, wall_s=2, cpu_s=2))
    assert result.stdout.strip() != "wrote", result


def test_parallel_runs_use_every_worker(box):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(box.workers) as pool:
        results = list(pool.map(lambda i: run(box, f"print({i} * 2)"), range(12)))
    assert [r.stdout.strip() for r in results] == [str(i * 2) for i in range(12)]


def test_installed_namespace_backends_start_wherever_the_checkout_lives():
    """A backend whose tool is installed must work as root on Linux: a skip here would hide a
    broken sandbox (e.g. a fork server read from a checkout that the jail's /tmp hides)."""
    import shutil

    if os.geteuid() != 0:
        pytest.skip("namespaced backends need root or user namespaces; checked as root only")
    reasons = available_backends()
    if shutil.which("bwrap"):
        assert reasons["bwrap"] is None, reasons["bwrap"]
    assert reasons["nsjail"] is None, reasons["nsjail"]
