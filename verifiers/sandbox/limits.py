"""Resource limits of one sandboxed execution, and the result it produces."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """Caps applied to each execution (the forked child and everything it spawns).

    cpu_s: CPU seconds (RLIMIT_CPU). wall_s: wall-clock seconds, then the process group is
    killed. memory_mb: address space (RLIMIT_AS). nproc: processes of the sandbox uid
    (RLIMIT_NPROC). fsize_mb: largest file it may write (RLIMIT_FSIZE). output_bytes:
    stdout+stderr+results captured before the run is killed. nofile: open descriptors.
    """

    cpu_s: float = 10.0
    wall_s: float = 10.0
    memory_mb: int = 1024
    nproc: int = 64
    fsize_mb: int = 16
    output_bytes: int = 4 << 20
    nofile: int = 128

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value <= 0:
                raise ValueError(f"sandbox limit {name} must be positive, got {value}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


# What the fork server reports for one execution (``ExecResult.status``):
OK = "ok"  # ran to completion (any exit code, any signal such as a memory kill)
TIMEOUT = "timeout"  # wall-clock limit hit; the process tree was killed
OUTPUT_LIMIT = "output_limit"  # printed more than output_bytes; killed
CRASHED = "crashed"  # the worker died twice running this code (it killed its server)
INFRA_ERROR = "infra_error"  # the sandbox itself failed: not the code's fault


@dataclass(frozen=True)
class ExecResult:
    """What happened to one execution. ``results`` is the child's fd-3 channel."""

    status: str
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    results: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    details: str = ""

    @property
    def is_infra_error(self) -> bool:
        return self.status == INFRA_ERROR

    @classmethod
    def from_reply(cls, reply: dict) -> ExecResult:
        if reply.get("status") == "server_error":
            return cls(INFRA_ERROR, details=f"fork server failed: {reply.get('error', '?')}")
        fields = ("status", "exit_code", "signal", "stdout", "stderr", "results", "wall_s", "cpu_s")
        return cls(**{k: reply[k] for k in fields if k in reply})
