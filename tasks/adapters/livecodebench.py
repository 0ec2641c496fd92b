"""LiveCodeBench (``livecodebench/code_generation_lite``): all releases, and M2RL's v5 and v6 windows.

Tests are the public ones and every private one: a benchmark grades every test, as
LiveCodeBench does (training rewards may run a sample of them, ``verifiers.code``'s
``max_tests``). The Hub stores private tests as
base64 of zlib of a pickled *string* of JSON; that string is read from the pickle opcode by
opcode (``pickletools.genops``), never unpickled, so no code in the data can run, and a
pickle holding anything but one string drops the row. stdin/stdout problems become ``stdio``
references, LeetCode-style ones ``call`` references on ``Solution.<func_name>``.

The M2RL release (github Mosi-AI/M2RL, README and eval_config) names "LiveCodeBench v5 / v6"
but no date windows. We use the common ones: v5 = problems of 2024-08-01 .. 2025-02-01 from
``release_v5`` (279 problems: NeMo-Skills' ``test_v5_2408_2502``, DeepSeek-R1's
2024-08 .. 2025-01); v6 = 2025-02-01 .. 2025-05-01 from ``release_v6`` (175 problems, as
many as ``release_v6`` added in ``test6.jsonl``; Qwen3's "v6 (25.02-25.05)"). NeMo-Skills'
v6 default spans 2024-08 .. 2025-05 (454 problems) instead: another benchmark, same name.
Every file of the release is read and filtered by ``contest_date``, so the windows do not
depend on which file holds which month.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import zlib
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypedDict

from tasks.adapters.code import question_and_format
from tasks.adapters.common import col, json_field
from tasks.files import read_json_records
from tasks.prompts import build_prompt
from tasks.quality import SkipRow, field_of
from tasks.spec import Adapter, LoadRequest, Reader, RowContext, TaskSpec, register_task

HUB_ID = "livecodebench/code_generation_lite"
# A Hub commit of the dataset after "add v6" (2025-04-21), whose test*.jsonl files have not
# changed since, as the Hub's commit pages show it (not fetched from here). datasets >= 4
# no longer runs the repository's loading script: the release's files, as that script listed
# them, are downloaded instead.
HUB_REVISION = "fd01d39fef386440b71bddf621cf0eb2df2b16d0"
RELEASE_FILES = {
    f"release_v{n}": tuple(["test.jsonl"] + [f"test{i}.jsonl" for i in range(2, n + 1)]) for n in range(1, 7)
}
WINDOWS = {  # task -> (first day, day after the last), see the module docstring
    "livecodebench_v5": (date(2024, 8, 1), date(2025, 2, 1)),
    "livecodebench_v6": (date(2025, 2, 1), date(2025, 5, 1)),
}
MAX_DECOMPRESSED = 1 << 30
_STRING_OPS = {"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"}
_HARMLESS_OPS = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"}


def pickled_string(data: bytes) -> str:
    """The one ``str`` a pickle holds, read without unpickling; anything else raises ValueError."""
    value: str | None = None
    for op, arg, _ in pickletools.genops(data):
        if op.name in _HARMLESS_OPS:
            continue
        if op.name in _STRING_OPS and value is None:
            value = arg
        elif op.name == "STOP" and value is not None:
            return value
        else:
            raise ValueError(f"pickle holds more than a string: opcode {op.name}")
    raise ValueError("pickle without a string")


def decode_tests(value: Any) -> list[dict[str, Any]]:
    """Test cases from a JSON string, a list, or base64(zlib(pickled JSON string or JSON))."""
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        return list(value)
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(value, validate=True), MAX_DECOMPRESSED)
        if inflate.unconsumed_tail:
            raise SkipRow("private tests larger than 1 GiB")
        if not raw.strip():
            return []
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError:
            pass
        try:
            string = pickled_string(raw)
        except ValueError as exc:  # genops' own messages name positions: keep ours only
            reason = str(exc) if str(exc).startswith("pickle ") else "not a pickle"
            raise SkipRow(f"private tests cannot be decoded: {reason}") from None
        return json.loads(string)
    except SkipRow:
        raise
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise SkipRow(f"private tests cannot be decoded ({type(exc).__name__})") from None


def _call_case(test: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "args": [json.loads(a) for a in str(test["input"]).split("\n") if a.strip()],
        "expected": json.loads(test["output"]),
    }


def tests_reference(tests: list[dict[str, Any]], metadata: Any) -> dict[str, Any]:
    """A ``stdio`` reference when every test reads stdin, else a ``call`` one on func_name."""
    if not tests:
        raise SkipRow("no usable tests")
    if all(t.get("testtype") == "stdin" for t in tests):
        cases = [{"input": t["input"], "output": t["output"]} for t in tests]
        return {"style": "stdio", "cases": cases}
    fn_name = (json_field(metadata or "{}", "metadata") or {}).get("func_name")
    if not fn_name:
        raise SkipRow("functional tests without metadata.func_name")
    try:
        cases = [_call_case(t) for t in tests]
    except (KeyError, ValueError):
        raise SkipRow("functional test is not JSON") from None
    return {"style": "call", "fn_name": fn_name, "class_name": "Solution", "cases": cases}


def livecodebench(raw: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """Public tests and every private one (a solution is right only when it passes them all)."""
    public = json_field(col(raw, "public_test_cases", ctx), "public_test_cases") or []
    private = decode_tests(raw.get("private_test_cases"))
    native = str(raw.get("question_id", ctx.index))
    ref = tests_reference([*public, *private], raw.get("metadata"))
    ref["tests"] = {"public": len(public), "private": len(private)}
    question, fmt = question_and_format(raw, ctx, "question_content")
    if ref["style"] == "stdio":
        fmt = "code_stdio"
    return ctx.row(build_prompt(fmt, question), ref, native)


def contest_day(raw: Mapping[str, Any]) -> date:
    value = field_of(raw, "contest_date", f"LiveCodeBench ({HUB_ID})")
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value)).date()
    except ValueError:
        raise ValueError(f"LiveCodeBench row {raw.get('question_id')!r}: bad date {value!r}") from None


def in_window(task: str):
    first, after_last = WINDOWS[task]
    return lambda raw, split: first <= contest_day(raw) < after_last


def read_release(req: LoadRequest, spec: TaskSpec) -> Iterable[Mapping[str, Any]]:
    """The release's JSONL files from the Hub, downloaded once (cached), read line by line."""
    from huggingface_hub import hf_hub_download

    paths = [
        Path(hf_hub_download(HUB_ID, name, repo_type="dataset", revision=spec.hub_revision))
        for name in RELEASE_FILES[str(spec.hub_config)]
    ]
    return (record for path in paths for record in read_json_records(path))


REQUIRED = ("question_id", "question_content", "contest_date", "public_test_cases")


class _CommonFields(TypedDict):
    """The ``TaskSpec`` fields every LiveCodeBench task shares."""

    domain: str
    verifier: str
    prompt_format: str
    adapt: Adapter
    hub_id: str | None
    hub_revision: str | None
    hub_read: Reader | None
    required_columns: tuple[str, ...]


_COMMON = _CommonFields(
    domain="code",
    verifier="code",
    prompt_format="code",
    adapt=livecodebench,
    hub_id=HUB_ID,
    hub_revision=HUB_REVISION,
    hub_read=read_release,
    required_columns=REQUIRED,
)
register_task(
    TaskSpec(
        name="livecodebench",
        source=f"{HUB_ID} (release_v6, every date)",
        hub_config="release_v6",
        **_COMMON,
    )
)
for _task, _release in (("livecodebench_v5", "release_v5"), ("livecodebench_v6", "release_v6")):
    _first, _after = WINDOWS[_task]
    register_task(
        TaskSpec(
            name=_task,
            source=f"{HUB_ID} ({_release}, contests {_first} .. {_after}, end excluded)",
            hub_config=_release,
            keep=in_window(_task),
            description=(
                f"M2RL's {_task.rsplit('_', 1)[1]}: {_release} problems dated {_first} to "
                f"{_after} (excluded); every public and private test of each problem"
            ),
            **_COMMON,
        )
    )
