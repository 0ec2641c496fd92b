"""Math adapters: GSM8K, MATH, MATH-500, AIME 2024/2025 and DAPO-Math-17k."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import answer_ref, col, last_boxed, text
from tasks.prompts import build_prompt
from tasks.quality import SkipRow
from tasks.spec import RowContext, TaskSpec, register_task

_DAPO_SUFFIX = "Remember to put your answer on its own line after"


def gsm8k(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    solution = text(raw, "answer", ctx)
    if "####" not in solution:
        raise SkipRow("no #### answer")
    gold = solution.rsplit("####", 1)[1].strip().replace(",", "")
    prompt = build_prompt("math", text(raw, "question", ctx))
    return ctx.row(prompt, answer_ref(gold))


def problem_answer(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """Rows with ``problem`` and ``answer`` (MATH-500, AIME); ids from the native id column."""
    gold = str(col(raw, "answer", ctx)).strip()
    if gold.isdigit():  # AIME answers are integers, some stored zero-padded ("025")
        gold = str(int(gold))
    native = raw.get("unique_id", raw.get("id"))
    return ctx.row(build_prompt("math", text(raw, "problem", ctx)), answer_ref(gold), native)


def hendrycks_math(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """MATH rows carry only a worked solution; the gold answer is its last \\boxed{}."""
    gold = last_boxed(text(raw, "solution", ctx))
    if not gold:
        raise SkipRow("no \\boxed answer in solution")
    return ctx.row(build_prompt("math", text(raw, "problem", ctx)), answer_ref(gold))


def strip_dapo_wrapper(question: str) -> str:
    """DAPO prompts wrap the problem in an instruction paragraph before and after it."""
    parts = question.split("\n\n")
    if len(parts) >= 3 and _DAPO_SUFFIX in parts[-1]:
        return "\n\n".join(parts[1:-1])
    return question


def dapo(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    messages = col(raw, "prompt", ctx)
    reward = col(raw, "reward_model", ctx)
    if not messages or not isinstance(reward, Mapping):
        raise SkipRow("empty prompt or reward_model")
    question = strip_dapo_wrapper(str(messages[0]["content"]))
    native = (raw.get("extra_info") or {}).get("index")
    return ctx.row(build_prompt("math", question), answer_ref(reward.get("ground_truth")), native)


def _math(name: str, adapt, **kw: Any) -> TaskSpec:
    return register_task(TaskSpec(name=name, domain="math", verifier="math", prompt_format="math", adapt=adapt, **kw))


_math(
    "gsm8k",
    gsm8k,
    source="openai/gsm8k (main)",
    local_file="math/gsm8k_test.jsonl",
    hub_id="openai/gsm8k",
    hub_config="main",
    required_columns=("question", "answer"),
)
_math(
    "math500",
    problem_answer,
    source="HuggingFaceH4/MATH-500",
    local_file="math/math500_test.jsonl",
    hub_id="HuggingFaceH4/MATH-500",
    required_columns=("problem", "answer"),
)
_math(
    "math",
    hendrycks_math,
    source="DigitalLearningGmbH/MATH-lighteval",
    hub_id="DigitalLearningGmbH/MATH-lighteval",
    required_columns=("problem", "solution"),
)
_math(
    "aime24",
    problem_answer,
    source="AIME 2024 (math-evaluation-harness copy)",
    local_file="math/aime24_test.jsonl",
    required_columns=("problem", "answer"),
)
_math(
    "aime25",
    problem_answer,
    source="math-ai/aime25",
    local_file="math/aime25_test.jsonl",
    hub_id="math-ai/aime25",
    required_columns=("problem", "answer"),
)
_math(
    "dapo_math_17k",
    dapo,
    source="BytedTsinghua-SIA/DAPO-Math-17k",
    split="train",
    hub_id="BytedTsinghua-SIA/DAPO-Math-17k",
    required_columns=("prompt", "reward_model"),
)
