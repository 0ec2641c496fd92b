"""The M2RL training blend nvidia/Nemotron-3-Nano-RL-Training-Blend, split by its ``dataset`` field.

Assumed layout (NeMo Gym JSONL, one record per line, after NVIDIA's ``create_nanov3_jsonl.py``
has resolved the DAPO/Skywork placeholders): every record has ``dataset`` (sub-dataset name)
and ``responses_create_params.input`` (the chat messages the policy sees); per sub-dataset:
math ``expected_answer``; stem_mcqa ``options`` ([{letter: text}]) and ``expected_answer``;
instruction_following ``instruction_id_list``, ``kwargs``, ``prompt``; comp_coding
``verifier_metadata.unit_tests.{inputs, outputs}``; workbench ``ground_truth`` (the gold tool
calls), ``responses_create_params.tools``, ``category``, ``environment_name``. Unresolved
placeholder records (``_hf_placeholder`` present) carry no question and are dropped, counted.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from tasks.adapters.common import col, json_field, mcq_ref, messages_of
from tasks.adapters.instruction import clean_kwargs
from tasks.quality import SkipRow
from tasks.registry import RowContext, TaskSpec, register_task

HUB_ID = "nvidia/Nemotron-3-Nano-RL-Training-Blend"
PREFIX = "nano_v3_sft_profiled_"
AGENT_VERIFIER = "agent"  # agent rows are scored by their environment's episode reward
WORKBENCH_ENV = "workbench"


def in_datasets(raw: Mapping[str, Any], split: str, *, suffixes: tuple[str, ...]) -> bool:
    name = str(raw.get("dataset", ""))
    return any(name == PREFIX + s or name.endswith(s) for s in suffixes)


def _params(raw: Mapping[str, Any], ctx: RowContext) -> Mapping[str, Any]:
    if "_hf_placeholder" in raw:
        raise SkipRow("unresolved _hf_placeholder (run the card's create_nanov3_jsonl.py)")
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
    return ctx.row(prompt, ref, _native(raw))


def code(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    prompt = _prompt(raw, ctx)
    meta = json_field(col(raw, "verifier_metadata", ctx), "verifier_metadata") or {}
    tests = meta.get("unit_tests") or {}
    pairs = list(zip(tests.get("inputs") or [], tests.get("outputs") or [], strict=False))
    if not pairs:
        raise SkipRow("no unit tests")
    ref = {"style": "stdio", "cases": [{"input": i, "output": o} for i, o in pairs]}
    return ctx.row(prompt, ref, _native(raw))


def agent(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    params = _params(raw, ctx)
    gold = json_field(col(raw, "ground_truth", ctx), "ground_truth")
    if not isinstance(gold, list):
        raise SkipRow("ground_truth is not a list of calls")
    task = {
        "tools": params.get("tools") or [],
        "ground_truth": gold,
        "category": raw.get("category", ""),
    }
    env = str(raw.get("environment_name") or WORKBENCH_ENV)
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
