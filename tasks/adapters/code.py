"""Code adapters: HumanEval, MBPP, LeetCode contests, TACO and APPS (LiveCodeBench: its own module)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import col, json_field, text
from tasks.prompts import build_prompt
from tasks.quality import SkipRow
from tasks.spec import RowContext, TaskSpec, register_task

# LeetCode-style tests use typing names and common modules without importing them.
LEETCODE_SETUP = (
    "from typing import *\nfrom collections import *\nfrom functools import *\n"
    "from itertools import *\nfrom heapq import *\nfrom bisect import *\nimport math\n"
)
MBPP_SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}


def humaneval(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    stub = text(raw, "prompt", ctx)
    user = f"Complete the following Python function.\n\n```python\n{stub}```"
    ref = {
        "style": "assert",
        "test": text(raw, "test", ctx),
        "entry_point": text(raw, "entry_point", ctx),
        "prefix": stub,  # lets a body-only completion still define the function
    }
    return ctx.row(build_prompt("code", user), ref, raw.get("task_id"))


def mbpp_keep(raw: Mapping[str, Any], split: str) -> bool:
    """The local file holds all 974 tasks; the conventional splits are task-id ranges."""
    lo, hi = MBPP_SPLITS.get(split, (1, 10**9))
    return lo <= int(raw.get("task_id", 0)) <= hi


def mbpp(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    tests = list(col(raw, "test_list", ctx))
    if not tests:
        raise SkipRow("no tests")
    user = f"{text(raw, 'text', ctx)}\nYour code should pass these tests:\n\n" + "\n".join(tests)
    ref = {"style": "assert", "test": "\n".join(tests), "setup": raw.get("test_setup_code") or ""}
    return ctx.row(build_prompt("code", user), ref, raw.get("task_id"))


def leetcode(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    ref = {"style": "assert", "test": text(raw, "test", ctx), "setup": LEETCODE_SETUP}
    return ctx.row(build_prompt("code", text(raw, "prompt_sft", ctx)), ref, raw.get("task_id"))


def _stdio_text(value: Any) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def io_reference(io: Any, fn_name: str | None = None) -> dict[str, Any]:
    """A code reference from {"inputs": [...], "outputs": [...], "fn_name"?} (TACO / APPS)."""
    io = json_field(io, "input_output")
    if not isinstance(io, Mapping) or not io.get("inputs") or not io.get("outputs"):
        raise SkipRow("no test cases")
    pairs = list(zip(io["inputs"], io["outputs"], strict=False))
    fn_name = fn_name or io.get("fn_name")
    if not fn_name:
        cases: list[dict[str, Any]] = [{"input": _stdio_text(i), "output": _stdio_text(o)} for i, o in pairs]
        return {"style": "stdio", "cases": cases}
    # APPS/TACO wrap a call's return value in a one-element list; unwrap it.
    cases = [{"args": list(i), "expected": o[0] if isinstance(o, list) and len(o) == 1 else o} for i, o in pairs]
    return {"style": "call", "fn_name": fn_name, "class_name": "Solution", "cases": cases}


def question_and_format(raw: Mapping[str, Any], ctx: RowContext, field: str) -> tuple[str, str]:
    """The problem text (with its starter code, if any) and the prompt format it needs."""
    question = text(raw, field, ctx)
    starter = (raw.get("starter_code") or "").strip()
    fmt = "code" if starter else "code_stdio"
    if starter:
        question += f"\n\nStart from this code:\n```python\n{starter}\n```"
    return question, fmt


def taco_apps(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    question, fmt = question_and_format(raw, ctx, "question")
    ref = io_reference(col(raw, "input_output", ctx))
    if ref["style"] == "stdio":
        fmt = "code_stdio"
    return ctx.row(build_prompt(fmt, question), ref, raw.get("problem_id", raw.get("name")))


def _code(name: str, adapt, **kw: Any) -> TaskSpec:
    return register_task(TaskSpec(name=name, domain="code", verifier="code", prompt_format="code", adapt=adapt, **kw))


_code(
    "humaneval",
    humaneval,
    source="openai/openai_humaneval",
    local_file="code/HumanEval.jsonl.gz",
    hub_id="openai/openai_humaneval",
    required_columns=("task_id", "prompt", "test", "entry_point"),
)
_code(
    "mbpp",
    mbpp,
    source="google-research-datasets/mbpp (full)",
    local_file="code/mbpp.jsonl",
    hub_id="google-research-datasets/mbpp",
    hub_config="full",
    keep=mbpp_keep,
    required_columns=("task_id", "text", "test_list"),
)
_code(
    "leetcode_contest",
    leetcode,
    source="DeepSeek-Coder LeetCode contests 2024-01..07",
    local_file="code/leetcode_contest_20240121-Jul.jsonl",
    required_columns=("task_id", "prompt_sft", "test"),
)
_code(
    "taco",
    taco_apps,
    source="BAAI/TACO",
    split="train",
    hub_id="BAAI/TACO",
    required_columns=("question", "input_output"),
)
_code(
    "apps",
    taco_apps,
    source="codeparrot/apps",
    hub_id="codeparrot/apps",
    required_columns=("problem_id", "question", "input_output"),
)
