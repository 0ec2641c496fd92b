"""One hostile property per test, on every backend: bounded, contained, and the next run works."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from verifiers import Status, verify

CALL_REF = {"style": "call", "fn_name": "f", "cases": [{"args": [], "expected": 1}]}
NORMAL = "```python\ndef f():\n    return 1\n```"
MAX_SECONDS = 30.0  # hang detection: the limits are 1-2 s, a loaded host may add a few


def fenced(body: str) -> str:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"```python\ndef f():\n{indented}\n    return 1\n```"


def run_hostile(verifier, body: str, reference: dict = CALL_REF):
    """Verify the hostile code, check time and the sandbox's health afterwards."""
    start = time.monotonic()
    verdict = verify(fenced(body), reference, verifier)
    elapsed = time.monotonic() - start
    assert elapsed < MAX_SECONDS, f"hostile run took {elapsed:.1f}s"
    # hostile output is scored, never an infrastructure error (those count toward aborting a run)
    assert verdict.status in (Status.WRONG, Status.TIMEOUT), verdict
    after = verify(NORMAL, CALL_REF, verifier)
    assert after.status is Status.CORRECT, f"sandbox unhealthy after hostile run: {after}"
    return verdict


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A root-owned folder (0755) with a file, visible to the host outside any private /tmp."""
    base = Path(tempfile.mkdtemp(prefix="rlvr-hostile-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    (base / "keep.txt").write_text("precious")
    os.chmod(base / "keep.txt", stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def needs_uid_separation(backend: str) -> None:
    if backend == "rlimit" and os.geteuid() != 0:
        pytest.skip("rlimit without root runs code as the caller: it cannot protect files")


def test_fork_bomb(code_verifier):
    verdict = run_hostile(code_verifier, "import os\nwhile True:\n    os.fork()")
    assert "BlockingIOError" in verdict.details or verdict.status is Status.TIMEOUT, verdict


def test_infinite_loop(code_verifier):
    verdict = run_hostile(code_verifier, "while True:\n    pass")
    assert verdict.status is Status.TIMEOUT


def test_allocate_10_gb(code_verifier):
    verdict = run_hostile(code_verifier, "block = bytearray(10 * 1024**3)")
    assert "memory" in verdict.details.lower()


def test_print_100_mb(code_verifier):
    verdict = run_hostile(code_verifier, "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 2**20)")
    assert "output" in verdict.details


def test_write_outside_temp(code_verifier, backend, host_dir):
    needs_uid_separation(backend)
    target = host_dir / "pwned.txt"
    run_hostile(code_verifier, f"open({str(target)!r}, 'w').write('x')")
    assert not target.exists()


def test_environment_secrets_invisible(code_verifier, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_fake_secret_123")
    monkeypatch.setenv("WANDB_API_KEY", "wandb_fake_secret_456")
    body = (
        "import os, glob\n"
        "seen = repr(dict(os.environ))\n"
        "for path in glob.glob('/proc/*/environ'):\n"
        "    try:\n"
        "        seen += open(path, 'rb').read().decode(errors='replace')\n"
        "    except OSError:\n"
        "        pass\n"
        "if 'fake_secret' in seen:\n"
        "    return 1\n"
        "return 0"
    )
    verdict = run_hostile(code_verifier, body)
    assert "expected 1, got 0" in verdict.details, verdict


def test_loopback_listener_unreachable(code_verifier):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[object] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set() and not accepted:
            try:
                accepted.append(listener.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept)
    thread.start()
    body = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\ns.sendall(b'leak')"
    try:
        run_hostile(code_verifier, body)
    finally:
        time.sleep(0.3)  # let a connection that did get through reach accept()
        done.set()
        thread.join()
        listener.close()
    assert not accepted, "sandboxed code reached a host loopback listener"


def _processes_with(marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{entry}: {cmdline}")
    return found


def test_background_process_killed(code_verifier):
    marker = "37.4242"
    body = f"import subprocess\nsubprocess.Popen(['sleep', '{marker}'], start_new_session=True)\nreturn 0"
    run_hostile(code_verifier, body)
    time.sleep(0.3)
    assert not _processes_with(f"sleep {marker}")


def test_kill_parent(code_verifier):
    run_hostile(
        code_verifier,
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(0.5)\nreturn 0",
    )


def test_sleep_past_limit(code_verifier):
    verdict = run_hostile(code_verifier, "import time\ntime.sleep(300)")  # returns: it was cut
    assert verdict.status is Status.TIMEOUT


def test_delete_visible_files(code_verifier, backend, host_dir):
    needs_uid_separation(backend)
    run_hostile(code_verifier, f"import shutil\nshutil.rmtree({str(host_dir)!r})\nreturn 0")
    assert (host_dir / "keep.txt").read_text() == "precious"
