"""Function-calling adapters: Salesforce xLAM-60k and Team-ACE ToolACE, as single-turn calls."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from tasks.adapters.common import col, json_field, messages_of, text
from tasks.prompts import tool_prompt
from tasks.quality import SkipRow
from tasks.spec import RowContext, TaskSpec, register_task

_TOOLACE_MARKER = "in JSON format that you can invoke"


def xlam_function(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An xLAM tool ({param: {type, description, default}}) as a BFCL/JSON-schema function doc."""
    params = tool.get("parameters") or {}
    properties = {
        name: {"type": str(p.get("type", "string")), "description": str(p.get("description", ""))}
        for name, p in params.items()
    }
    required = [n for n, p in params.items() if "optional" not in str(p.get("type", "")) and "default" not in p]
    return {
        "name": tool["name"],
        "description": tool.get("description", ""),
        "parameters": {"type": "dict", "properties": properties, "required": required},
    }


def ground_truth(calls: Sequence[Mapping[str, Any]], functions: list[dict[str, Any]]) -> list[dict]:
    """BFCL possible-answer form: each argument's allowed values; "" marks an omittable one."""
    docs = {f["name"]: f["parameters"] for f in functions}
    out = []
    for call in calls:
        name, args = call.get("name"), call.get("arguments") or {}
        if name not in docs or not isinstance(args, Mapping):
            raise SkipRow("call to an undocumented function")
        allowed = {k: [v] for k, v in args.items()}
        for param in docs[name]["properties"]:
            if param not in allowed and param not in docs[name]["required"]:
                allowed[param] = [""]
        out.append({name: allowed})
    return out


def xlam(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    tools = json_field(col(raw, "tools", ctx), "tools")
    calls = json_field(col(raw, "answers", ctx), "answers")
    if not isinstance(tools, list) or not isinstance(calls, list):
        raise SkipRow("tools or answers is not a list")
    functions = [xlam_function(t) for t in tools]
    ref = {
        "functions": functions,
        "ground_truth": ground_truth(calls, functions),
        "parallel": len(calls) > 1,
    }
    return ctx.row(tool_prompt(text(raw, "query", ctx), functions), ref, raw.get("id"))


def toolace_functions(system: str) -> list[dict[str, Any]]:
    """The JSON list of functions ToolACE embeds in its system prompt."""
    start = system.find("[", system.find(_TOOLACE_MARKER))
    try:
        functions, _ = json.JSONDecoder().raw_decode(system[start:])
    except ValueError:
        raise SkipRow("no function list in system prompt") from None
    return functions


def python_calls(reply: str) -> list[dict[str, Any]]:
    """``[f(a=1), g(b='x')]`` as [{name, arguments}]; anything else drops the row."""
    try:
        tree = ast.parse(reply.strip(), mode="eval").body
        calls = tree.elts if isinstance(tree, ast.List) else []
        if not calls or not all(isinstance(c, ast.Call) and not c.args for c in calls):
            raise ValueError("not a list of keyword-argument calls")
        return [
            {
                "name": ast.unparse(c.func),
                "arguments": {kw.arg: ast.literal_eval(kw.value) for kw in c.keywords},
            }
            for c in cast("list[ast.Call]", calls)  # each checked to be an ast.Call above
        ]
    except (SyntaxError, ValueError, TypeError):
        raise SkipRow("first assistant reply is not a list of calls") from None


def toolace(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    functions = toolace_functions(text(raw, "system", ctx))
    turns = messages_of(col(raw, "conversations", ctx))
    if len(turns) < 2 or turns[0]["role"] != "user" or turns[1]["role"] != "assistant":
        raise SkipRow("conversation does not open with user then assistant")
    calls = python_calls(turns[1]["content"])
    ref = {
        "functions": functions,
        "ground_truth": ground_truth(calls, functions),
        "parallel": len(calls) > 1,
    }
    return ctx.row(tool_prompt(turns[0]["content"], functions), ref)


for _name, _adapt, _hub, _cols in (
    ("xlam", xlam, "Salesforce/xlam-function-calling-60k", ("id", "query", "answers", "tools")),
    ("toolace", toolace, "Team-ACE/ToolACE", ("system", "conversations")),
):
    register_task(
        TaskSpec(
            name=_name,
            domain="agent",
            verifier="tool_calls",
            source=_hub,
            adapt=_adapt,
            split="train",
            prompt_format="tool_calls",
            hub_id=_hub,
            required_columns=_cols,
        )
    )
