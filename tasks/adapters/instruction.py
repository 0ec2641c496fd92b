"""Instruction-following adapters: IFEval, IFBench, allenai RLVR-IFeval and generated rows.

Every reference is checked against the instruction table as it is built: a row naming an
instruction id the table lacks, or arguments it rejects, is a counted drop, not a
training-time error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import col, json_field, messages_of, text
from tasks.prompts import build_prompt
from tasks.quality import SkipRow
from tasks.spec import LoadRequest, RowContext, TaskSpec, register_task
from verifiers.ifeval import InvalidReferenceError, UnsupportedInstructionError, parse_reference

# RLVR-IFeval names each constraint by its checker function (open-instruct's naming); these
# are the IFEval instruction ids they implement and how their arguments are renamed.
RLVR_FUNCS: dict[str, tuple[str, dict[str, str]]] = {
    "verify_keywords": ("keywords:existence", {"keyword_list": "keywords"}),
    "verify_keyword_frequency": (
        "keywords:frequency",
        {"word": "keyword", "N": "frequency", "quantifier": "relation"},
    ),
    "validate_forbidden_words": (
        "keywords:forbidden_words",
        {"forbidden_words": "forbidden_words"},
    ),
    "verify_letter_frequency": (
        "keywords:letter_frequency",
        {"letter": "letter", "N": "let_frequency", "quantifier": "let_relation"},
    ),
    "validate_response_language": ("language:response_language", {"language": "language"}),
    "verify_paragraph_count": ("length_constraints:number_paragraphs", {"N": "num_paragraphs"}),
    "validate_word_constraint": (
        "length_constraints:number_words",
        {"N": "num_words", "quantifier": "relation"},
    ),
    "verify_sentence_constraint": (
        "length_constraints:number_sentences",
        {"N": "num_sentences", "quantifier": "relation"},
    ),
    "validate_paragraphs": (
        "length_constraints:nth_paragraph_first_word",
        {"N": "num_paragraphs", "i": "nth_paragraph", "first_word": "first_word"},
    ),
    "verify_postscript": (
        "detectable_content:postscript",
        {"postscript_marker": "postscript_marker"},
    ),
    "validate_placeholders": ("detectable_content:number_placeholders", {"N": "num_placeholders"}),
    "verify_bullet_points": ("detectable_format:number_bullet_lists", {"N": "num_bullets"}),
    "validate_title": ("detectable_format:title", {}),
    "validate_choice": ("detectable_format:constrained_response", {}),
    "validate_highlighted_sections": (
        "detectable_format:number_highlighted_sections",
        {"N": "num_highlights"},
    ),
    "validate_sections": (
        "detectable_format:multiple_sections",
        {"N": "num_sections", "section_splitter": "section_spliter"},
    ),
    "validate_json_format": ("detectable_format:json_format", {}),
    "validate_repeat_prompt": (
        "combination:repeat_prompt",
        {"original_prompt": "prompt_to_repeat"},
    ),
    "validate_two_responses": ("combination:two_responses", {}),
    "validate_uppercase": ("change_case:english_capital", {}),
    "validate_lowercase": ("change_case:english_lowercase", {}),
    "validate_frequency_capital_words": (
        "change_case:capital_word_frequency",
        {"N": "capital_frequency", "quantifier": "capital_relation"},
    ),
    "validate_end": ("startend:end_checker", {"end_phrase": "end_phrase"}),
    "validate_quotation": ("startend:quotation", {}),
    "validate_no_commas": ("punctuation:no_comma", {}),
}
_RELATIONS = {"at least": "at least", "less than": "less than", "at most": "less than"}
_COUNTS = {
    "relation": ("num_words", "num_sentences", "frequency"),
    "let_relation": ("let_frequency",),
    "capital_relation": ("capital_frequency",),
}


def clean_kwargs(kwargs: Any, n: int) -> list[dict[str, Any]]:
    """One dict per instruction with null-valued arguments dropped (IFEval's own convention)."""
    kwargs = json_field(kwargs, "kwargs") or []
    if len(kwargs) != n:
        raise SkipRow("kwargs and instruction_id_list differ in length")
    return [{k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs]


def scorable(ref: dict[str, Any]) -> dict[str, Any]:
    """The reference, once the instruction table accepts it; else the row is dropped.

    An id the table lacks or arguments it rejects would only surface at scoring time as
    error verdicts, so they are counted drops at load, the reason naming the id.
    """
    try:
        parse_reference(ref)
    except UnsupportedInstructionError as exc:
        raise SkipRow(str(exc)) from None
    except InvalidReferenceError as exc:
        raise SkipRow(f"malformed instruction: {exc}") from None
    return ref


def ifeval(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = text(raw, "prompt", ctx)
    ids = list(json_field(col(raw, "instruction_id_list", ctx), "instruction_id_list") or [])
    if not ids:
        raise SkipRow("no instructions")
    ref = {
        "instruction_id_list": ids,
        "kwargs": clean_kwargs(col(raw, "kwargs", ctx), len(ids)),
        "prompt": prompt,
    }
    return ctx.row(build_prompt("instruction", prompt), scorable(ref), raw.get("key"))


def rlvr_constraint(ground_truth: Any) -> tuple[str, dict[str, Any]]:
    """IFEval instruction id and kwargs of an RLVR-IFeval ``ground_truth`` JSON string."""
    gt = json_field(ground_truth, "ground_truth")
    if not isinstance(gt, Mapping) or gt.get("func_name") not in RLVR_FUNCS:
        raise SkipRow("unknown constraint function")
    inst, renames = RLVR_FUNCS[gt["func_name"]]
    kwargs = {new: gt[old] for old, new in renames.items() if gt.get(old) is not None}
    for rel_key, count_keys in _COUNTS.items():
        if rel_key not in kwargs:
            continue
        said = str(kwargs[rel_key]).lower()
        if said not in _RELATIONS:
            raise SkipRow("relation IFEval cannot express")
        if said == "at most":  # counts are integers: "at most N" is "less than N+1"
            count_key = next(k for k in count_keys if k in kwargs)
            kwargs[count_key] = int(kwargs[count_key]) + 1
        kwargs[rel_key] = _RELATIONS[said]
    return inst, kwargs


def rlvr_ifeval(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    messages = [m for m in messages_of(col(raw, "messages", ctx)) if m["role"] != "assistant"]
    inst, kwargs = rlvr_constraint(col(raw, "ground_truth", ctx))
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if not user.strip():
        raise SkipRow("no user message")
    ref = {"instruction_id_list": [inst], "kwargs": [kwargs], "prompt": user}
    return ctx.row(messages, scorable(ref))


IFGEN_DEFAULT_N = 2000


def read_ifgen(req: LoadRequest, spec: TaskSpec):
    from tasks.ifgen.rows import generate

    return generate(req.limit or IFGEN_DEFAULT_N, req.seed, req.split)


def ifgen(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    return ctx.row(build_prompt("instruction", raw["prompt"]), scorable(raw["reference"]), raw["key"])


def _if(name: str, adapt, **kw: Any) -> TaskSpec:
    return register_task(
        TaskSpec(
            name=name,
            domain="instruction",
            verifier="ifeval",
            prompt_format="instruction",
            adapt=adapt,
            **kw,
        )
    )


_if(
    "ifeval",
    ifeval,
    source="google/IFEval",
    split="train",
    local_file="instruction_following/ifeval_input_data.jsonl",
    hub_id="google/IFEval",
    required_columns=("key", "prompt", "instruction_id_list", "kwargs"),
)
_if(
    "ifbench",
    ifeval,
    source="allenai/IFBench_test (allenai/IFBench data/IFBench_test.jsonl)",
    split="train",
    local_file="instruction_following/IFBench_test.jsonl",
    hub_id="allenai/IFBench_test",
    required_columns=("key", "prompt", "instruction_id_list", "kwargs"),
    description=(
        "the 300 IFBench test prompts (58 instruction ids, all in the ifeval verifier's "
        "table); prompt-level strict accuracy is the benchmark's score"
    ),
)
_if(
    "rlvr_ifeval",
    rlvr_ifeval,
    source="allenai/RLVR-IFeval",
    split="train",
    hub_id="allenai/RLVR-IFeval",
    required_columns=("messages", "ground_truth"),
)
for _name, _split in (("ifgen", "train"), ("ifgen_heldout", "test")):
    _if(
        _name,
        ifgen,
        source="tasks.ifgen: templated requests with IFEval/IFEvalG constraints",
        split=_split,
        read=read_ifgen,
        description=(
            "generated requests (genre x topic) with 1-3 sampled constraints and an unstated "
            "content check; ifgen_heldout's requests never appear in ifgen"
        ),
    )
