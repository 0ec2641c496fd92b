"""M2RL's science and general benchmarks from the Hub: HLE (text-only) and MMLU-Redux 2.0.

HLE (``cais/hle``, gated, split ``test``): rows with an image are left out (M2RL evaluates a
text-only model). ``exactMatch`` questions are scored by ``exact_match`` (normalised text,
or math equivalence for mathematical golds); ``multipleChoice`` ones, whose options the
question lists as ``A. ...`` lines, by ``science_mcq``. Left out: HLE's official grader, an
LLM judge that also accepts equivalent answers worded differently, and its calibration error.

MMLU-Redux 2.0 (``edinburgh-dawg/mmlu-redux-2.0``, one config per MMLU subject, split
``test``, 57 x 100 questions): the card's ``error_type`` decides, as ZeroEval and NeMo-Skills
prepare it: ``ok`` keeps the MMLU answer; ``wrong_groundtruth`` uses ``correct_answer`` when
it names one of the options (a letter, a 0-based index or the option's text) and drops the
row otherwise; every other type (``no_correct_answer``, ``multiple_correct_answers``,
``bad_question_clarity``, ``bad_options_clarity``, ``expert``) is dropped. A local copy is
one JSONL file with a ``subject`` column (the Hub reader adds it).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.adapters.common import col, letter_count, mcq_ref, text
from tasks.prompts import LETTERS, build_prompt, format_mcq
from tasks.quality import SkipRow
from tasks.spec import LoadRequest, RowContext, TaskSpec, register_task

MAX_MCQ_OPTIONS = 10  # science_mcq grades letters A..J

# -- HLE ------------------------------------------------------------------------------------


def hle_text_only(raw: Mapping[str, Any], split: str) -> bool:
    """HLE's text-only subset: no image (the Hub stores "" for none)."""
    return not str(raw.get("image") or "").strip()


def hle(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    question = text(raw, "question", ctx)
    answer = text(raw, "answer", ctx).strip()
    kind = col(raw, "answer_type", ctx)
    if kind == "exactMatch":
        return ctx.row(build_prompt("math", question), {"answer": answer}, raw.get("id"))
    if kind != "multipleChoice":
        raise SkipRow(f"answer_type {kind!r} is neither exactMatch nor multipleChoice")
    options = letter_count(question)
    if options > MAX_MCQ_OPTIONS:
        raise SkipRow(f"more than {MAX_MCQ_OPTIONS} options")
    ref = mcq_ref(answer, options)
    row = ctx.row(build_prompt("science_mcq", question), ref, raw.get("id"))
    return {**row, "verifier": "science_mcq"}


register_task(
    TaskSpec(
        name="hle",
        domain="science",
        verifier="exact_match",
        source="cais/hle (test, text-only, gated)",
        adapt=hle,
        prompt_format="math",
        hub_id="cais/hle",
        keep=hle_text_only,
        required_columns=("id", "question", "image", "answer", "answer_type"),
        description=(
            "Humanity's Last Exam, text-only questions. exactMatch rows: exact_match verifier "
            "(normalised text, math equivalence for mathematical answers); multipleChoice "
            "rows: science_mcq. Left out: the official LLM judge (accepts paraphrases, so "
            "scores here are a lower bound) and calibration error"
        ),
    )
)

# -- MMLU-Redux 2.0 ---------------------------------------------------------------------------

REDUX_HUB_ID = "edinburgh-dawg/mmlu-redux-2.0"
REDUX_SUBJECTS = (
    "abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology "
    "college_chemistry college_computer_science college_mathematics college_medicine "
    "college_physics computer_security conceptual_physics econometrics electrical_engineering "
    "elementary_mathematics formal_logic global_facts high_school_biology "
    "high_school_chemistry high_school_computer_science high_school_european_history "
    "high_school_geography high_school_government_and_politics high_school_macroeconomics "
    "high_school_mathematics high_school_microeconomics high_school_physics "
    "high_school_psychology high_school_statistics high_school_us_history "
    "high_school_world_history human_aging human_sexuality international_law jurisprudence "
    "logical_fallacies machine_learning management marketing medical_genetics miscellaneous "
    "moral_disputes moral_scenarios nutrition philosophy prehistory professional_accounting "
    "professional_law professional_medicine professional_psychology public_relations "
    "security_studies sociology us_foreign_policy virology world_religions"
).split()
REDUX_DROPPED = (
    "no_correct_answer",
    "multiple_correct_answers",
    "bad_question_clarity",
    "bad_options_clarity",
    "expert",
)


def read_redux_subjects(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    """Every subject's config from the Hub, each row tagged with its ``subject``."""
    import datasets

    parts = [
        (s, datasets.load_dataset(spec.hub_id, s, split=req.split, revision=spec.hub_revision)) for s in REDUX_SUBJECTS
    ]
    return ({**row, "subject": subject} for subject, part in parts for row in part)


def option_index(value: Any, options: list[str]) -> int | None:
    """The option ``correct_answer`` names: a letter, a 0-based index or the option's text."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or not value.is_integer()):
            return None
        return int(value) if 0 <= value < len(options) else None
    said = str(value).strip()
    if len(said) == 1 and said.upper() in LETTERS[: len(options)]:
        return LETTERS.index(said.upper())
    if said.isdigit() and int(said) < len(options):
        return int(said)
    matches = [i for i, o in enumerate(options) if o.strip() == said]
    return matches[0] if len(matches) == 1 else None


def redux_answer(raw: Mapping[str, Any], ctx: RowContext, options: list[str]) -> int:
    kind = str(col(raw, "error_type", ctx)).strip()
    if kind == "ok":
        index = option_index(col(raw, "answer", ctx), options)
    elif kind == "wrong_groundtruth":
        index = option_index(col(raw, "correct_answer", ctx), options)
        if index is None:
            raise SkipRow("wrong_groundtruth without a usable correct_answer")
    elif kind in REDUX_DROPPED:
        raise SkipRow(f"error_type {kind}")
    else:
        raise SkipRow(f"unknown error_type {kind!r}")
    if index is None:
        raise SkipRow("answer index outside the choices")
    return index


def mmlu_redux(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    options = [str(o) for o in col(raw, "choices", ctx) or []]
    if len(options) < 2 or not all(o.strip() for o in options):
        raise SkipRow("fewer than two options or an empty option")
    index = redux_answer(raw, ctx, options)
    question = text(raw, "question", ctx)
    subject = text(raw, "subject", ctx)
    key = hashlib.sha256(f"{question}\n{options}".encode()).hexdigest()[:12]
    user = format_mcq(question, options)
    ref = mcq_ref(LETTERS[index], len(options))
    return ctx.row(build_prompt("science_mcq", user), ref, f"{subject}/{key}")


register_task(
    TaskSpec(
        name="mmlu_redux",
        domain="science",
        verifier="science_mcq",
        source=f"{REDUX_HUB_ID} (57 subject configs, test)",
        adapt=mmlu_redux,
        prompt_format="science_mcq",
        hub_id=REDUX_HUB_ID,
        hub_read=read_redux_subjects,
        required_columns=(
            "subject",
            "question",
            "choices",
            "answer",
            "error_type",
            "correct_answer",
        ),
        description=(
            "MMLU-Redux 2.0: error_type ok kept, wrong_groundtruth re-keyed to "
            "correct_answer when it names an option, every other error type dropped"
        ),
    )
)
