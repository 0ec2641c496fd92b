"""Generated instruction-following rows: a base request plus one to three constraints.

Made the way IFEvalG and Tülu 3's instruction data were made: a natural request
(``base_prompts``) joined by constraints drawn from the IFEval/IFEvalG checker families with
sampled arguments (``constraints``), scored by the same checkers through the ``ifeval``
verifier. Every row also carries ``content:addresses_prompt`` (unstated: the answer is long
enough for its genre and names its topic), so an all-lowercase "ok" earns nothing.

Base requests are split by a hash of their text: 10% (``test``) never reach ``train``, so the
generated held-out rows measure constraints met on requests never trained on.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from typing import Any

from tasks.ifgen.base_prompts import GENRES, TOPICS, Genre, Topic, base_prompt
from tasks.ifgen.constraints import draw_constraints

SPLITS = ("train", "test")
TEST_SHARE = 10  # percent of base requests held out
CONSTRAINT_COUNTS = (1, 2, 3)
COUNT_WEIGHTS = (0.4, 0.35, 0.25)  # Tülu 3's IF data leans on one or two constraints
CONTENT_ID = "content:addresses_prompt"


def split_of(base: str) -> str:
    digest = int(hashlib.sha256(base.encode()).hexdigest()[:8], 16)
    return "test" if digest % 100 < TEST_SHARE else "train"


def base_requests(split: str) -> list[tuple[Genre, Topic]]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
    return [(g, t) for g in GENRES for t in TOPICS if split_of(base_prompt(g, t)) == split]


def make_row(genre: Genre, topic: Topic, rng: random.Random) -> dict[str, Any]:
    """One row's raw fields: the prompt text, its IFEval reference and a stable key."""
    base = base_prompt(genre, topic)
    count = rng.choices(CONSTRAINT_COUNTS, COUNT_WEIGHTS)[0]
    drawn = draw_constraints(rng, base, count)
    floor = genre.min_words
    for family, constraint in drawn:
        if (ceiling := family.max_words(constraint)) is not None:
            floor = min(floor, ceiling // 3)  # room under "fewer than N words"
    prompt = " ".join([base, *(c.sentence for _, c in drawn)])
    content = {"topic_words": list(topic.words), "min_words": floor}
    reference = {
        "instruction_id_list": [c.instruction_id for _, c in drawn] + [CONTENT_ID],
        "kwargs": [c.kwargs for _, c in drawn] + [content],
        "prompt": prompt,
        "request": base,
        "families": [f.name for f, _ in drawn],
    }
    key = hashlib.sha256(prompt.encode()).hexdigest()[:16]
    return {"key": key, "prompt": prompt, "reference": reference}


def generate(n: int, seed: int, split: str = "train") -> Iterator[dict[str, Any]]:
    """``n`` raw rows, deterministic by seed: the split's base requests cycled in a shuffled
    order, each time with freshly drawn constraints."""
    pool = base_requests(split)
    rng = random.Random(f"ifgen:{split}:{seed}")
    produced = 0
    while produced < n:
        for genre, topic in rng.sample(pool, len(pool)):
            if produced == n:
                return
            yield make_row(genre, topic, rng)
            produced += 1
