"""Checks that an answer addresses its prompt, for generated instruction-following rows.

Constraint rewards alone are won by degenerate answers: an all-lowercase "ok" follows a case
constraint, an empty reply follows "no commas". Generated training rows therefore carry one
unstated instruction, ``content:addresses_prompt``: the answer is at least ``min_words`` words
long and uses at least one of the prompt's topic words (any case, any ending: "volcano" is
met by "Volcanoes"). No benchmark row uses it, so it is in no suite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from verifiers.ifeval.text import count_words


def addresses_prompt(response: str, *, topic_words: Sequence[str], min_words: int) -> bool:
    """content:addresses_prompt: long enough, and on the topic the prompt names."""
    words = [w.strip() for w in topic_words if w.strip()]
    if not words:
        raise ValueError("topic_words must name at least one word")
    if count_words(response) < min_words:
        return False
    return any(re.search(rf"\b{re.escape(w)}", response, flags=re.IGNORECASE) for w in words)


CONTENT_CHECKS = {"content:addresses_prompt": addresses_prompt}
