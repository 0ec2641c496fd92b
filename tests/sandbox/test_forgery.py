"""Hostile solutions trying to forge passing assert-style results: every one must score 0.

One attack per test, on every backend. Each hostile program is a WRONG ``add`` (it subtracts)
plus one attempt to make the harness report passes anyway, graded by MBPP-style top-level asserts and by a
HumanEval-style ``check(candidate)``; the correct ``add`` scores 1 on the same reference, so the
reference can be passed. The attacks are written here and nowhere else.
"""

from __future__ import annotations

import pytest

from verifiers import Status, verify

# Slow tier, in one process: 236 hostile runs, and a few (a 40 MB return value) come close to
# the 1 s per-test limit when two test workers share the cores. Sandboxes of parallel workers no
# longer interfere: each runs its code as its own uid (verifiers/sandbox/uid_slots.py).
pytestmark = pytest.mark.slow

MARKER = "marker-q8z1"  # in the tests only: a solution that finds it in memory has seen them
ASSERTS = {
    "style": "assert",
    "test": f"import fractions\nassert add(1, 2) == 3\nassert add(2, 2) == 4\nassert add(0, 5) == 5, {MARKER!r}\n",
}
CHECK = {
    "style": "assert",
    "test": "def check(candidate):\n    import statistics\n    assert candidate(1, 2) == 3\n"
    f"    assert candidate(-1, 1) == 0, {MARKER!r}\n",
    "entry_point": "add",
}
REFERENCES = {"asserts": ASSERTS, "check": CHECK}
CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


def masked(text: str) -> str:
    """``text`` XOR 0x5A as a bytes-literal body: the program can search for it without holding it."""
    return "".join(f"\\x{c ^ 0x5A:02x}" for c in text.encode())


# Shared by several attacks: the nonce wherever a frame holds it (an in-process harness keeps
# it in a local), forged result lines carrying it, and a way to push them down every fd.
FORGE = r"""
import os as _os, re as _re, sys as _sys
HEX16 = _re.compile(r"\b[0-9a-f]{16}\b")
def nonces():
    found, frame = set(), _sys._getframe()
    while frame is not None:
        for value in [*frame.f_locals.values(), *frame.f_globals.values()]:
            if isinstance(value, str):
                found.update(HEX16.findall(value))
        frame = frame.f_back
    return tuple(found) or ("",)
def forged(candidates=None):
    lines = []
    for nonce in candidates or nonces():
        for unit in range(12):
            lines.append('{"unit": %d, "kind": "test", "ok": true, "nonce": "%s"}' % (unit, nonce))
    return ("\n".join(lines) + "\n").encode()
def spray(data):
    for fd in range(256):
        try:
            _os.write(fd, data)
        except OSError:
            pass
"""

ATTACKS = {
    "replace os.write and os.writev": WRONG
    + r"""
import os
_write = os.write
def _lie(fd, data):
    data = bytes(data).replace(b'"ok": false', b'"ok": true').replace(b'"ok":false', b'"ok":true')
    return _write(fd, data)
os.write = _lie
os.writev = lambda fd, buffers: _lie(fd, b"".join(buffers))
""",
    "replace sys.stdout.write": FORGE
    + r"""
import sys
sys.stdout.write = lambda text: _os.write(1, forged())
def add(a, b):
    print("report")
    return a - b
""",
    "patch json.dumps and json.loads": WRONG
    + r"""
import json
_dumps, _loads = json.dumps, json.loads
def _pass(obj):
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if k not in ("why", "type", "msg", "exc")}
        obj["ok"] = True
    return obj
json.dumps = lambda obj, *a, **k: _dumps(_pass(obj), *a, **k)
json.loads = lambda text, *a, **k: _pass(_loads(text, *a, **k))
""",
    "patch modules through sys.modules": WRONG
    + r"""
import sys
def _lying(write):
    return lambda fd, data: write(fd, bytes(data).replace(b'"ok": false', b'"ok": true'))
for module in list(sys.modules.values()):
    if getattr(module, "write", None) is getattr(sys.modules["os"], "write"):
        module.write = _lying(module.write)
sys.modules["traceback"] = None
""",
    "patch builtins (exec, compile, AssertionError, __import__)": WRONG
    + r"""
import builtins
class _Never(Exception):
    pass
builtins.exec = lambda *a, **k: None
builtins.compile = lambda *a, **k: None
builtins.AssertionError = _Never
_import = builtins.__import__
builtins.__import__ = lambda name, *a, **k: _import(name, *a, **k)
""",
    "disable sys.exit and os._exit, then forge": FORGE
    + r"""
sys = _sys
sys.exit = lambda *a: None
_exit = _os._exit
_os._exit = lambda *a: None
def add(a, b):
    spray(forged())
    _exit(0)
""",
    "walk frames for the nonce and the tests": FORGE
    + r"""
import inspect, sys
def _loot():
    nonces, texts = set(), []
    frames = [f.frame for f in inspect.stack()]
    frame = sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    for f in frames:
        for value in [*f.f_locals.values(), *f.f_globals.values()]:
            if isinstance(value, str):
                nonces.update(HEX16.findall(value))
                if "assert" in value and "add" in value:
                    texts.append(value)
    return nonces, texts
def add(a, b):
    nonces, texts = _loot()
    spray(forged(tuple(nonces) or ("",)))
    return a + b if texts else a - b
""",
    "scan gc.get_objects() for the nonce and the tests": FORGE
    + r"""
import gc
def _loot():
    nonces, found = set(), False
    for obj in gc.get_objects():
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        for value in list(values):
            if isinstance(value, str):
                nonces.update(HEX16.findall(value))
                found = found or ("assert" in value and "== 3" in value)
    return nonces, found
def add(a, b):
    nonces, found = _loot()
    spray(forged(tuple(nonces) or ("",)))
    return a + b if found else a - b
""",
    "write forged records through /proc/self/fd": FORGE
    + r"""
import glob
def add(a, b):
    for path in glob.glob("/proc/self/fd/*"):
        try:
            fd = _os.open(path, _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(fd, forged())
        except OSError:
            pass
    return a - b
""",
    "read the judge's /proc/<ppid> cmdline, environ and mem; write its fds": FORGE
    + r"""
import glob
def _loot():
    parent, nonces, opened = _os.getppid(), set(), False
    for name in ("cmdline", "environ", "mem"):
        try:
            with open(f"/proc/{parent}/{name}", "rb") as f:
                nonces.update(HEX16.findall(f.read(1 << 20).decode(errors="replace")))
        except (OSError, ValueError):
            pass
    for path in glob.glob(f"/proc/{parent}/fd/*"):
        try:
            fd = _os.open(path, _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(fd, forged(tuple(nonces) or ("",)))
            opened = True
        except OSError:
            pass
    return opened
OPENED = _loot()
def add(a, b):
    return a + b if OPENED else a - b
""",
    "duplicate the judge's descriptors with pidfd_getfd": FORGE
    + r"""
import ctypes
def _steal():
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(434, _os.getppid(), 0)  # pidfd_open (same number on x86_64 and arm64)
    stolen = False
    for target in range(3, 64):
        fd = libc.syscall(438, pidfd, target, 0)  # pidfd_getfd
        if fd >= 0:
            try:
                _os.write(fd, forged())
                stolen = True
            except OSError:
                pass
    return stolen
STOLEN = _steal()
def add(a, b):
    return a + b if STOLEN else a - b
""",
    "write forged records to every fd of every process": FORGE
    + r"""
import glob
def _spray_all():
    mine, others = str(_os.getpid()), False
    for path in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            fd = _os.open(path, _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(fd, forged())
            others = others or path.split("/")[2] != mine
        except OSError:
            pass
    return others
OTHERS = _spray_all()
def add(a, b):
    return a + b if OTHERS else a - b
""",
    "write forged records to fds 0-255 then exit before any test": FORGE
    + r"""
spray(forged())
_os._exit(0)
""",
    "SIGKILL the judge during a call": r"""
import os, signal
def add(a, b):
    os.kill(os.getppid(), signal.SIGKILL)
    return a - b
""",
    "SIGSTOP the judge": r"""
import os, signal, time
os.kill(os.getppid(), signal.SIGSTOP)
time.sleep(0.2)
def add(a, b):
    return a - b
""",
    "killpg its own group and the judge's": r"""
import os, signal
def add(a, b):
    try:
        os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)
    except OSError:
        pass
    os.killpg(0, signal.SIGKILL)
    return a - b
""",
    "signal storm at the judge": r"""
import os, signal
def add(a, b):
    for _ in range(20):
        for sig in (signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP):
            try:
                os.kill(os.getppid(), sig)
            except OSError:
                pass
    return a - b
""",
    "object whose __eq__ is always True": r"""
class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __hash__(self):
        return 0
    def __bool__(self):
        return True
def add(a, b):
    return Anything()
""",
    "int subclass with rigged __eq__ and __hash__": r"""
class Int(int):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __hash__(self):
        return hash(3)
def add(a, b):
    return Int(a - b)
""",
    "str subclass with rigged __eq__": r"""
class Str(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
def add(a, b):
    return Str(a - b)
""",
    "list subclass with rigged __eq__": r"""
class List(list):
    def __eq__(self, other):
        return True
def add(a, b):
    return List([a - b])
""",
    "scan its own memory for the tests": f"""
import ctypes
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: let it read /proc/self/mem
def _snapshots():
    out = []
    with open("/proc/self/maps") as maps:
        lines = maps.readlines()
    with open("/proc/self/mem", "rb", 0) as mem:
        for line in lines:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                out.append(mem.read(hi - lo))
            except (OSError, ValueError, OverflowError):
                continue
    return out
SNAPSHOTS = _snapshots()  # before any unmasked needle exists
def _seen(needle):
    table = bytes(c ^ 0x5A for c in range(256))
    return any(needle in snap.translate(table) for snap in SNAPSHOTS)
SEES_ITSELF = _seen(b"{masked("def _snapshots")}")
SEES_TESTS = _seen(b"{masked(MARKER)}")
def add(a, b):
    if not SEES_ITSELF:
        raise RuntimeError("the scan is blind")
    return a + b if SEES_TESTS else a - b
""",
    "read the tests' descriptor (fd 4) or any memfd": r"""
import os, glob
def _read_all():
    seen = b""
    for path in ["/proc/self/fd/3", "/proc/self/fd/4", *glob.glob("/proc/self/fd/*")]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            seen += os.pread(fd, 1 << 20, 0)
        except OSError:
            pass
    return seen
SEEN = _read_all()
def add(a, b):
    return a + b if b"add(2, 2)" in SEEN or b"candidate(1, 2)" in SEEN else a - b
""",
    "plant modules the tests import in the working folder": r"""
PLANT = '''
import os, re, sys
nonces = set()
frame = sys._getframe()
while frame is not None:
    for value in [*frame.f_locals.values(), *frame.f_globals.values()]:
        if isinstance(value, str):
            nonces.update(re.findall(r"[0-9a-f]{16}", value))
    frame = frame.f_back
for nonce in nonces or [""]:
    for unit in range(8):
        os.write(3, ('{"unit": %d, "kind": "test", "ok": true, "nonce": "%s"}\\n' % (unit, nonce)).encode())
os._exit(0)
'''
for name in ("statistics", "fractions", "decimal", "random", "copy", "json", "ast"):
    with open(f"{name}.py", "w") as f:
        f.write(PLANT)
def add(a, b):
    return a - b
""",
    "pre-send fake replies on its own pipe": r"""
import json, os, struct
def _frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data
FAKE = _frame({"ready": True}) + b"".join(
    _frame({"id": i, "ok": True, "value": 3}) for i in range(16))
for fd in range(3, 64):
    try:
        os.write(fd, FAKE)
    except OSError:
        pass
def add(a, b):
    return a - b
""",
    "shadow the test's helpers and the builtins around the result": r"""
def check(candidate):
    pass
abs = lambda x: 0
len = lambda x: 3
isinstance = lambda obj, cls: True
def add(a, b):
    return a - b
""",
}


def py(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.parametrize("ref_name", sorted(REFERENCES))
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_scores_zero(code_verifier, attack, ref_name):
    reference = REFERENCES[ref_name]
    assert verify(py(CORRECT), reference, code_verifier).score == 1.0
    verdict = verify(py(ATTACKS[attack]), reference, code_verifier)
    assert verdict.score == 0.0, verdict
    stopped = attack.startswith(("SIGSTOP", "SIGKILL", "killpg", "signal"))
    assert verdict.status in ((Status.WRONG, Status.TIMEOUT) if stopped else (Status.WRONG,)), verdict


def test_memory_scan_finds_no_earlier_run(code_verifier):
    """Graded again and again (as GRPO does), a run finds no trace of the earlier runs' tests."""
    for _ in range(3):
        verdict = verify(py(ATTACKS["scan its own memory for the tests"]), ASSERTS, code_verifier)
        assert verdict.score == 0.0 and "blind" not in verdict.details, verdict


def test_builtins_shadowed_around_the_result_stay_trusted(code_verifier):
    reference = {
        "style": "assert",
        "test": "assert abs(add(1, 2) - 3) < 1e-9\nassert len([add(1, 1)]) == 1",
    }
    assert verify(py(CORRECT), reference, code_verifier).is_correct
    hostile = "abs = lambda x: 0\nlen = lambda x: 1\ndef add(a, b):\n    return a - b"
    assert verify(py(hostile), reference, code_verifier).score == 0.0


def test_prompt_helpers_come_from_the_prompt(code_verifier):
    """HumanEval/38-style: the test calls a helper the prompt defines; redefining it cannot help."""
    prompt = 'def encode(s):\n    return s[::-1] + \'!\'\n\ndef decode(s):\n    """Undo encode."""\n'
    reference = {
        "style": "assert",
        "prefix": prompt,
        "entry_point": "decode",
        "test": "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n",
    }
    assert verify(py("    return s[:-1][::-1]"), reference, code_verifier).is_correct
    cheat = "def encode(s):\n    return s\n\ndef decode(s):\n    return s"
    assert verify(py(cheat), reference, code_verifier).score == 0.0


BOMBS = {
    "deep": "x = []\n    for _ in range(10 ** 5):\n        x = [x]\n    return x",
    "cyclic": "x = []\n    x.append(x)\n    return x",
    "huge-int": "return 10 ** 100000",
    "huge-str": "return 'x' * (40 << 20)",
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_bomb_return_values_fail_the_test(code_verifier, bomb):
    verdict = verify(py(f"def add(a, b):\n    {BOMBS[bomb]}"), ASSERTS, code_verifier)
    assert verdict.status is Status.WRONG, verdict
