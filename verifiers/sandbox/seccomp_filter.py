"""A small seccomp-BPF filter, installed with ctypes, that denies dangerous syscalls to untrusted code.

Stdlib only: the fork server imports this module inside the sandbox. Denied syscalls fail with
EPERM (so ordinary Python code sees a clean ``PermissionError``); a syscall made through a
foreign ABI (32-bit ``int 0x80`` on x86_64, x32) kills the process, because its numbers differ.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_AF_UNIX = 1

# name -> (audit arch, {syscall: number}); only syscalls untrusted test code never needs.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "kexec_load": 246,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "kexec_load": 104,
        },
    ),
}


def supported() -> bool:
    return platform.machine() in _ARCHES


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build_program(allow_unix_sockets: bool) -> bytes:
    """Assemble the filter: check the ABI, deny the listed syscalls, allow everything else."""
    arch, numbers = _ARCHES[platform.machine()]
    deny = _RET_ERRNO | errno.EPERM
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(_JEQ_K, 1, 0, arch),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if platform.machine() == "x86_64":  # x32 ABI numbers have bit 30 set
        prog += [_insn(_JGE_K, 0, 1, 0x40000000), _insn(_RET_K, 0, 0, _RET_KILL_PROCESS)]
    for name, nr in numbers.items():
        if name == "socket" and allow_unix_sockets:
            prog += [
                _insn(_JEQ_K, 0, 4, nr),
                _insn(_LD_W_ABS, 0, 0, 16),  # low half of args[0] (little endian): the family
                _insn(_JEQ_K, 0, 1, _AF_UNIX),
                _insn(_RET_K, 0, 0, _RET_ALLOW),
                _insn(_RET_K, 0, 0, deny),
            ]
        else:
            prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, deny)]
    prog.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PREPARED: dict[bool, tuple] = {}


def prepare(allow_unix_sockets: bool) -> tuple:
    """The filter ready to install (a fork server builds it once; each child only installs)."""
    if allow_unix_sockets not in _PREPARED:
        program = build_program(allow_unix_sockets)
        buf = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
        _PREPARED[allow_unix_sockets] = (buf, fprog, ctypes.CDLL(None, use_errno=True))
    return _PREPARED[allow_unix_sockets]


def install(allow_unix_sockets: bool) -> None:
    """Install the filter on the calling process (inherited by its children). Raises OSError."""
    _buf, fprog, libc = prepare(allow_unix_sockets)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
