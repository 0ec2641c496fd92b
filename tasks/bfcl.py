"""BFCL v3 single-turn adapters: question + possible-answer files -> canonical ``agent`` rows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tasks.schema import make_row
from verifiers.tool_calls import resolve_name

CATEGORIES: tuple[str, ...] = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
PARALLEL_CATEGORIES = frozenset({"parallel", "parallel_multiple"})

SYSTEM_PROMPT = (
    "You can call these functions:\n{functions}\n\n"
    "To call functions, reply with one block per call:\n"
    '<tool_call>\n{{"name": "<function name>", "arguments": {{<arguments as JSON>}}}}\n</tool_call>\n'
    "If none of the functions fits the request, answer without calling any."
)


class BfclDataError(ValueError):
    """BFCL files missing or inconsistent; the message names the file."""


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise BfclDataError(f"BFCL file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _answers(category: str, data_dir: Path) -> dict[str, list[Any]]:
    if category == "irrelevance":
        return {}  # no call is the right answer; BFCL ships no possible-answer file for it
    path = data_dir / "possible_answer" / f"BFCL_v3_{category}.json"
    return {item["id"]: item["ground_truth"] for item in _read_jsonl(path)}


def system_prompt(functions: list[Mapping[str, Any]]) -> str:
    return SYSTEM_PROMPT.format(functions=json.dumps(functions, ensure_ascii=False, indent=1))


def _prompt(question: list[list[Mapping[str, str]]], functions: list[Any]) -> list[dict[str, str]]:
    turn = [dict(m) for m in question[0]]
    system = system_prompt(functions)
    if turn and turn[0].get("role") == "system":  # keep the item's own system text after ours
        system = f"{system}\n\n{turn.pop(0)['content']}"
    return [{"role": "system", "content": system}, *turn]


def load_bfcl(category: str, data_dir: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Canonical rows for one BFCL v3 single-turn category (verifier ``tool_calls``).

    ``data_dir`` is the ``bfcl_v3`` folder (question files plus ``possible_answer/``).
    ``multi_turn_base`` is not supported: its official scoring needs BFCL's API simulators.
    """
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL category {category!r}; supported: {', '.join(CATEGORIES)}")
    data_dir = Path(data_dir)
    answers = _answers(category, data_dir)
    rows: list[dict[str, Any]] = []
    for item in _read_jsonl(data_dir / f"BFCL_v3_{category}.json"):
        if limit is not None and len(rows) >= limit:
            break
        if category != "irrelevance" and item["id"] not in answers:
            raise BfclDataError(f"{category}: no possible answer for {item['id']}")
        reference = {
            "functions": item["function"],
            "ground_truth": answers.get(item["id"], []),
            "parallel": category in PARALLEL_CATEGORIES,
        }
        rows.append(
            make_row(
                prompt=_prompt(item["question"], item["function"]),
                domain="agent",
                verifier="tool_calls",
                reference=reference,
                source=f"bfcl_v3/{category}",
                id=item["id"],
            )
        )
    return rows


# The single-call categories a small model can be trained on: the held-out quarter of their
# items (chosen by a hash of the item id, so every run and machine agrees) never reaches training.
SPLIT_CATEGORIES: tuple[str, ...] = ("simple", "multiple")
HELDOUT_SHARE = 25  # percent


def split_of(item_id: str) -> str:
    """``test`` for the held-out quarter of BFCL items, ``train`` for the rest."""
    digest = int(hashlib.sha256(item_id.encode()).hexdigest()[:8], 16)
    return "test" if digest % 100 < HELDOUT_SHARE else "train"


def load_bfcl_split(split: str, data_dir: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """BFCL's simple and multiple items of one side of the train/test split, interleaved in
    hash order (so a limit draws both categories), at most ``limit`` rows."""
    if split not in ("train", "test"):
        raise BfclDataError(f"unknown BFCL split {split!r}; use train or test")
    rows = [r for category in SPLIT_CATEGORIES for r in load_bfcl(category, data_dir) if split_of(r["id"]) == split]
    rows.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
    return rows[:limit] if limit is not None else rows


def _first_allowed(options: Any) -> Any:
    listed = [o for o in _listed(options) if o != ""]
    return _instantiate(listed[0])


def _instantiate(value: Any) -> Any:
    if isinstance(value, dict):  # a template: each key maps to its own allowed values
        return {k: _first_allowed(v) for k, v in value.items() if "" not in _listed(v)}
    if isinstance(value, list):
        return [_instantiate(v) for v in value]
    return value


def _listed(options: Any) -> list[Any]:
    return options if isinstance(options, list) else [options]


def gold_calls(ground_truth: list[Mapping[str, Any]], functions: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One concrete right answer: per gold call the first allowed value of each parameter,
    optional (``""``-allowed) ones omitted unless the function requires them. Usable as a
    demonstration target; names are the documented ones the model sees."""
    docs = {f["name"]: f for f in functions}
    calls = []
    for gold in ground_truth:
        ((name, params),) = gold.items()
        name = resolve_name(name, docs) or name
        required = set((docs.get(name, {}).get("parameters") or {}).get("required") or [])
        arguments = {
            p: _first_allowed(v)
            for p, v in params.items()
            if "" not in _listed(v) or (p in required and any(o != "" for o in _listed(v)))
        }
        calls.append({"name": name, "arguments": arguments})
    return calls
