"""The M2RL training blend nvidia/Nemotron-3-Nano-RL-Training-Blend, split by its ``dataset`` field.

Assumed layout (NeMo Gym JSONL, one record per line, after NVIDIA's ``create_nanov3_jsonl.py``
has resolved the DAPO/Skywork placeholders): every record has ``dataset`` (sub-dataset name)
and ``responses_create_params.input`` (the chat messages the policy sees); per sub-dataset:
math ``expected_answer``; stem_mcqa ``options`` ([{letter: text}]) and ``expected_answer``;
instruction_following ``instruction_id_list``, ``kwargs``, ``prompt``; comp_coding
``verifier_metadata.unit_tests.{inputs, outputs}``; workbench ``ground_truth`` (the gold tool
calls, ``arguments`` as JSON text), ``responses_create_params.tools``, ``category``,
``environment_name``. Placeholder records (``_hf_placeholder`` present) carry no question; they
are resolved from local copies of their source datasets (``tasks.adapters.blend_placeholders``)
or dropped, counted, with the fix in the reason. Agent rows replay in the ``workbench``
environment (NeMo Gym's workplace assistant); rows it cannot reproduce are dropped, counted.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import col, json_field, mcq_ref, messages_of
from tasks.adapters.instruction import clean_kwargs, scorable
from tasks.quality import SkipRow
from tasks.spec import RowContext, TaskSpec, register_task

HUB_ID = "nvidia/Nemotron-3-Nano-RL-Training-Blend"
PREFIX = "nano_v3_sft_profiled_"
# Agent rows are scored by their environment's episode: live in TRL's tool loop, or by the
# environment replay verifier (registered as "workplace", it serves every environment).
AGENT_VERIFIER = "workplace"
WORKBENCH_ENV = "workbench"
# The blend's environment_name values -> our environment (NeMo Gym calls it workplace_assistant)
ENVIRONMENT_NAMES = {"workbench": WORKBENCH_ENV, "workplace_assistant": WORKBENCH_ENV}


def in_datasets(raw: Mapping[str, Any], split: str, *, suffixes: tuple[str, ...]) -> bool:
    name = str(raw.get("dataset", ""))
    return any(name == PREFIX + s or name.endswith(s) for s in suffixes)


def _params(raw: Mapping[str, Any], ctx: RowContext) -> Mapping[str, Any]:
    if "_hf_placeholder" in raw:
        from tasks.adapters.blend_placeholders import unresolved_reason

        raise SkipRow(unresolved_reason(raw))
    params = json_field(col(raw, "responses_create_params", ctx), "responses_create_params")
    if not isinstance(params, Mapping):
        raise SkipRow("responses_create_params is not an object")
    return params


def _prompt(raw: Mapping[str, Any], ctx: RowContext) -> list[dict[str, str]]:
    return messages_of(_params(raw, ctx).get("input"))


def _native(raw: Mapping[str, Any]) -> Any:
    return raw.get("uuid", raw.get("id"))


def math(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = _prompt(raw, ctx)
    answer = str(col(raw, "expected_answer", ctx) or "").strip()
    if not answer:
        raise SkipRow("empty expected_answer")
    return ctx.row(prompt, {"answer": answer}, _native(raw))


def science(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = _prompt(raw, ctx)
    options = raw.get("options") or (raw.get("metadata") or {}).get("options") or []
    letters = [k for opt in json_field(options, "options") for k in opt]
    ref = mcq_ref(str(col(raw, "expected_answer", ctx)), len(letters))
    return ctx.row(prompt, ref, _native(raw))


def instruction(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = _prompt(raw, ctx)
    ids = list(json_field(col(raw, "instruction_id_list", ctx), "instruction_id_list") or [])
    if not ids:
        raise SkipRow("no instructions")
    kwargs = clean_kwargs(col(raw, "kwargs", ctx), len(ids))
    user = str(raw.get("prompt") or prompt[-1]["content"])
    ref = {"instruction_id_list": ids, "kwargs": kwargs, "prompt": user}
    return ctx.row(prompt, scorable(ref), _native(raw))


def code(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = _prompt(raw, ctx)
    meta = json_field(col(raw, "verifier_metadata", ctx), "verifier_metadata") or {}
    tests = meta.get("unit_tests") or {}
    pairs = list(zip(tests.get("inputs") or [], tests.get("outputs") or [], strict=False))
    if not pairs:
        raise SkipRow("no unit tests")
    ref = {"style": "stdio", "cases": [{"input": i, "output": o} for i, o in pairs]}
    return ctx.row(prompt, ref, _native(raw))


def _gold_call(call: Any) -> dict[str, Any]:
    arguments = json_field(call.get("arguments", {}), "ground_truth arguments")
    if not isinstance(call.get("name"), str) or not isinstance(arguments, Mapping):
        raise SkipRow("ground_truth call without a name and an arguments object")
    return {"name": call["name"], "arguments": dict(arguments)}


def agent(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    from tasks.environments import workbench, workbench_data

    params = _params(raw, ctx)
    named = str(raw.get("environment_name") or WORKBENCH_ENV)
    if named not in ENVIRONMENT_NAMES:
        raise SkipRow(f"environment {named!r} is not emulated (only {', '.join(ENVIRONMENT_NAMES)})")
    gold = json_field(col(raw, "ground_truth", ctx), "ground_truth")
    if not isinstance(gold, list) or not all(isinstance(c, Mapping) for c in gold):
        raise SkipRow("ground_truth is not a list of calls")
    offered = {t.get("name") for t in params.get("tools") or [] if isinstance(t, Mapping)}
    missing = sorted(str(n) for n in offered - set(workbench.TOOLS))
    if missing:
        raise SkipRow(f"tool {missing[0]} is not emulated by the workbench")
    folder = workbench_data.database_dir()
    task = {
        "ground_truth": [_gold_call(c) for c in gold],
        "category": str(raw.get("category", "")),
        "database": str(folder.expanduser().resolve()),
    }
    try:
        problems = workbench.gold_problems(task)
    except workbench_data.DatabaseMissingError:
        raise SkipRow(f"workbench database not found at {folder}: {workbench_data.SOURCE_HINT}") from None
    if problems:
        raise SkipRow(f"gold call cannot be replayed: {problems[0][:120]}")
    env = ENVIRONMENT_NAMES[named]
    ref = {"environment": env, "task": task}
    return ctx.row(messages_of(params.get("input")), ref, _native(raw), environment=env)


_SPLITS = (
    ("math", "math", "math", math, ("dapo17k", "skywork_no_omni")),
    ("science", "science", "science_mcq", science, ("stem_mcqa",)),
    ("instruction", "instruction", "ifeval", instruction, ("instruction_following",)),
    ("code", "code", "code", code, ("comp_coding_50tests",)),
    ("agent", "agent", AGENT_VERIFIER, agent, ("workbench",)),
)

for _suffix, _domain, _verifier, _adapt, _subsets in _SPLITS:
    register_task(
        TaskSpec(
            name=f"nemotron_{_suffix}",
            domain=_domain,
            verifier=_verifier,
            source=f"{HUB_ID} (dataset in {', '.join(PREFIX + s for s in _subsets)})",
            adapt=_adapt,
            split="train",
            hub_id=HUB_ID,
            keep=functools.partial(in_datasets, suffixes=_subsets),
            required_columns=("dataset",),
        )
    )
