"""Dataset adapters, one module per family; importing this package registers their tasks."""

from tasks.adapters import (  # noqa: F401  each module calls register_task() at import
    agent,
    code,
    instruction,
    livecodebench,
    math,
    nemotron_blend,
    paper_benchmarks,
    rows,
    science,
    tool_calls,
)
