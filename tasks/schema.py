"""The canonical row every task produces, so all domains concatenate into one dataset."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

DOMAINS: tuple[str, ...] = ("math", "code", "science", "instruction", "agent")

COLUMNS: tuple[str, ...] = (
    "prompt",  # list of {role, content} chat messages
    "domain",  # one of DOMAINS
    "verifier",  # verifier registry name
    "reference",  # JSON string, verifier-specific
    "source",  # dataset name and split
    "id",  # stable id, unique within a source
    "environment",  # agent rows: environment name; "" elsewhere
)


class RowError(ValueError):
    """A row that violates the canonical schema; the message names the column."""


def check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise RowError(f"unknown domain {domain!r}; valid domains: {', '.join(DOMAINS)}")
    return domain


def make_row(
    *,
    prompt: Sequence[Mapping[str, str]],
    domain: str,
    verifier: str,
    reference: Mapping[str, Any],
    source: str,
    id: str,
    environment: str = "",
) -> dict[str, Any]:
    """Build a canonical row, validating every column."""
    check_domain(domain)
    messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]
    if not messages:
        raise RowError(f"row {id!r} from {source}: empty prompt")
    if not verifier:
        raise RowError(f"row {id!r} from {source}: missing verifier")
    return {
        "prompt": messages,
        "domain": domain,
        "verifier": verifier,
        "reference": json.dumps(dict(reference), sort_keys=True, ensure_ascii=False),
        "source": source,
        "id": str(id),
        "environment": environment,
    }


def reference_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """Decode a row's reference column."""
    ref = row["reference"]
    return json.loads(ref) if isinstance(ref, str) else dict(ref)
