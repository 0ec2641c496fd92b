"""The instruction suites we check and their ids: IFEval (25), IFEvalG (54), IFBench (83).

IFEvalG (open-instruct's training constraints) and IFBench (allenai's out-of-distribution
benchmark) each keep IFEval's 25 ids with IFEval's meaning and add ids of their own; no id
string names different checks in two suites (``tests/verifiers/test_ifeval_suites.py``
asserts it), so one table serves every row and a reference needs no suite field.
"""

from __future__ import annotations

from collections.abc import Callable

from verifiers.ifeval.checks_content import CONTENT_CHECKS
from verifiers.ifeval.checks_ifbench_custom import IFBENCH_CUSTOM_CHECKS
from verifiers.ifeval.checks_ifbench_format import IFBENCH_FORMAT_CHECKS
from verifiers.ifeval.checks_ifbench_sentences import IFBENCH_SENTENCE_CHECKS
from verifiers.ifeval.checks_ifbench_words import IFBENCH_WORD_CHECKS
from verifiers.ifeval.checks_ifevalg import IFEVALG_CHECKS
from verifiers.ifeval.checks_layout import LAYOUT_CHECKS
from verifiers.ifeval.checks_lexical import LEXICAL_CHECKS

_IFEVAL = {**LEXICAL_CHECKS, **LAYOUT_CHECKS}
_IFBENCH = {
    **IFBENCH_WORD_CHECKS,
    **IFBENCH_SENTENCE_CHECKS,
    **IFBENCH_FORMAT_CHECKS,
    **IFBENCH_CUSTOM_CHECKS,
}

SUITES: dict[str, frozenset[str]] = {
    "ifeval": frozenset(_IFEVAL),
    "ifevalg": frozenset(_IFEVAL) | frozenset(IFEVALG_CHECKS),
    "ifbench": frozenset(_IFEVAL) | frozenset(_IFBENCH),
}


def _merge(*tables: dict[str, Callable[..., bool]]) -> dict[str, Callable[..., bool]]:
    merged: dict[str, Callable[..., bool]] = {}
    for table in tables:
        if clash := sorted(set(merged) & set(table)):
            raise ValueError(f"instruction ids defined twice: {clash}")
        merged.update(table)
    return merged


# CONTENT_CHECKS: what generated training rows add unstated (no benchmark uses them)
CHECKS: dict[str, Callable[..., bool]] = _merge(_IFEVAL, IFEVALG_CHECKS, _IFBENCH, CONTENT_CHECKS)
