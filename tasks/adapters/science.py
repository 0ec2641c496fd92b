"""Science multiple-choice adapters: MMLU-STEM, MMLU-Pro, SuperGPQA and GPQA-Diamond."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import col, letter_count, mcq_ref, text
from tasks.prompts import LETTERS, build_prompt, format_mcq
from tasks.quality import SkipRow
from tasks.spec import RowContext, TaskSpec, register_task


def _options(raw: Mapping[str, Any], ctx: RowContext, field: str) -> list[str]:
    options = [str(o) for o in col(raw, field, ctx) or [] if str(o).strip()]
    if len(options) < 2:
        raise SkipRow("fewer than two options")
    return options


def choices_index(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """MMLU layout: ``question``, ``choices`` and a 0-based ``answer`` index."""
    options = _options(raw, ctx, "choices")
    index = col(raw, "answer", ctx)
    if not isinstance(index, int) or not 0 <= index < len(options):
        raise SkipRow("answer index outside the choices")
    user = format_mcq(text(raw, "question", ctx), options)
    return ctx.row(build_prompt("science_mcq", user), mcq_ref(LETTERS[index], len(options)))


def inline_options(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """Question text already lists ``A. ...`` options; answer is a letter or ``"E. text"``."""
    question = text(raw, "question", ctx)
    letter = text(raw, "answer", ctx).strip().split(".", 1)[0]
    ref = mcq_ref(letter, letter_count(question))
    return ctx.row(build_prompt("science_mcq", question), ref)


def options_letter(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """MMLU-Pro / SuperGPQA on the Hub: ``options`` list and an answer letter column."""
    options = _options(raw, ctx, "options")
    letter = raw.get("answer_letter") or text(raw, "answer", ctx)
    user = format_mcq(text(raw, "question", ctx), options)
    native = raw.get("question_id", raw.get("uuid"))
    return ctx.row(build_prompt("science_mcq", user), mcq_ref(str(letter), len(options)), native)


GPQA_SHUFFLE_SEED = 0  # recorded in every reference; change it to draw other option orders


def gpqa_order(record_id: str, base_seed: int = GPQA_SHUFFLE_SEED) -> tuple[int, list[int]]:
    """The per-question seed and option order: ``order[k]`` is the source answer shown at
    letter k (0 = "Correct Answer", i = "Incorrect Answer i"). A hash of the record id and
    the base seed, not Python's hash(): the same order in every process and run."""
    digest = hashlib.sha256(f"{base_seed}:{record_id}".encode()).hexdigest()
    seed = int(digest[:8], 16)
    order = [0, 1, 2, 3]
    random.Random(seed).shuffle(order)
    return seed, order


def gpqa(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """GPQA stores the right answer apart from three wrong ones; the options are shuffled per
    question (``gpqa_order``) and the reference records the seeds and the order."""
    answers = [text(raw, "Correct Answer", ctx).strip()]
    answers += [text(raw, f"Incorrect Answer {i}", ctx).strip() for i in (1, 2, 3)]
    if len(set(answers)) < len(answers):
        raise SkipRow("two answer options are the same text")
    native = str(text(raw, "Record ID", ctx)).strip()
    seed, order = gpqa_order(native)
    user = format_mcq(text(raw, "Question", ctx), [answers[i] for i in order])
    ref = mcq_ref(LETTERS[order.index(0)], len(order))
    ref |= {"base_seed": GPQA_SHUFFLE_SEED, "shuffle_seed": seed, "order": order}
    return ctx.row(build_prompt("science_mcq", user), ref, native)


def _mcq(name: str, adapt, **kw: Any) -> TaskSpec:
    return register_task(
        TaskSpec(
            name=name,
            domain="science",
            verifier="science_mcq",
            prompt_format="science_mcq",
            adapt=adapt,
            **kw,
        )
    )


_mcq(
    "mmlu_stem",
    choices_index,
    source="MMLU STEM subjects (math-evaluation-harness copy)",
    local_file="science/mmlu_stem_test.jsonl",
    required_columns=("question", "choices", "answer"),
)
_mcq(
    "mmlu_pro_sample300",
    inline_options,
    source="TIGER-Lab/MMLU-Pro, 300-question sample",
    local_file="science/mmlu_pro_sample300_test.jsonl",
    required_columns=("question", "answer"),
)
_mcq(
    "supergpqa_sample300",
    inline_options,
    source="m-a-p/SuperGPQA, 300-question sample",
    local_file="science/supergpqa_sample300_test.jsonl",
    required_columns=("question", "answer"),
)
_mcq(
    "mmlu_pro",
    options_letter,
    source="TIGER-Lab/MMLU-Pro",
    hub_id="TIGER-Lab/MMLU-Pro",
    required_columns=("question_id", "question", "options", "answer"),
)
_mcq(
    "supergpqa",
    options_letter,
    source="m-a-p/SuperGPQA",
    split="train",
    hub_id="m-a-p/SuperGPQA",
    required_columns=("uuid", "question", "options", "answer_letter"),
)
_mcq(
    "gpqa_diamond",
    gpqa,
    source="Idavidrein/gpqa (gpqa_diamond, gated)",
    split="train",
    hub_id="Idavidrein/gpqa",
    hub_config="gpqa_diamond",
    required_columns=(
        "Record ID",
        "Question",
        "Correct Answer",
        "Incorrect Answer 1",
        "Incorrect Answer 2",
        "Incorrect Answer 3",
    ),
    description=(
        "198 questions, options A-D shuffled per question from its Record ID and "
        f"base seed {GPQA_SHUFFLE_SEED} (both, and the order, in the reference); one order "
        "per question for every sample, as M2RL's release (which drew it unseeded)"
    ),
)
