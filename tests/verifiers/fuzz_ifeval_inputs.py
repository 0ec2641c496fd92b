"""IFEval fuzz inputs: valid references over every instruction id, and hostile responses.

References come from the IFEval data, the micro-suite and a generator that draws each id's
kwargs over their valid range, hostile but valid (counts 0 and 10**18, counts written as
``"7"`` or ``7.0``, padded phrases, regex metacharacters, every script, null extras that
IFEval drops). Responses sit exactly at a reference's count boundaries (N-1, N, N+1) or are
hostile: megabytes, binary and lone surrogates, thousands of paragraphs, sections, bullets,
placeholders and asterisks, deep or malformed JSON, text in every script, reasoning sections.
"""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz_support import binary_text, huge_text, unicode_text, with_think
from langdetect.detector_factory import PROFILES_DIRECTORY

from verifiers.ifeval import CHECKS, parse_reference

LANGUAGES = sorted(p.name for p in Path(PROFILES_DIRECTORY).iterdir())
# Code point ranges of many scripts (language detection sees each), marks and joiners.
SCRIPTS = {
    "latin": (0x61, 0x7A),
    "latin_ext": (0xC0, 0x24F),
    "greek": (0x3B1, 0x3C9),
    "cyrillic": (0x430, 0x44F),
    "armenian": (0x561, 0x586),
    "hebrew": (0x5D0, 0x5EA),
    "arabic": (0x621, 0x64A),
    "devanagari": (0x905, 0x939),
    "bengali": (0x985, 0x9B9),
    "gurmukhi": (0xA05, 0xA39),
    "gujarati": (0xA85, 0xAB9),
    "tamil": (0xB85, 0xBB9),
    "telugu": (0xC05, 0xC39),
    "kannada": (0xC85, 0xCB9),
    "malayalam": (0xD05, 0xD39),
    "sinhala": (0xD85, 0xDC6),
    "thai": (0xE01, 0xE2E),
    "lao": (0xE81, 0xEAE),
    "tibetan": (0xF40, 0xF69),
    "myanmar": (0x1000, 0x102A),
    "georgian": (0x10D0, 0x10FA),
    "hangul": (0xAC00, 0xD7A3),
    "ethiopic": (0x1200, 0x135A),
    "khmer": (0x1780, 0x17B3),
    "mongolian": (0x1820, 0x1877),
    "hiragana": (0x3041, 0x3096),
    "katakana": (0x30A1, 0x30FA),
    "cjk": (0x4E00, 0x9FFF),
    "cjk_ext_b": (0x20000, 0x2A6DF),
    "math_alnum": (0x1D400, 0x1D7FF),
    "emoji": (0x1F300, 0x1FAFF),
    "combining": (0x300, 0x36F),
    "controls": (0x200B, 0x202E),
    "private": (0xE000, 0xF8FF),
    "cherokee": (0x13A0, 0x13F4),
    "syriac": (0x710, 0x72F),
}
WORDS = ["the", "tea", "is", "hot", "NASA", "I", "Paris", "naïve", "日本", "Ωmega", "über"]
PHRASES = [
    "tea",
    "Tea time",
    " padded ",
    "a.b",
    ".*",
    "(a|b)+",
    "\\b",
    "[x]",
    "$1",
    "^",
    "***",
    "日本語",
    "привет",
    "ß",
    "İstanbul",
    "x" * 400,
    "end\nline",
    "\u200bzero",
    "P.S.",
    "<<t>>",
]
LETTERS = list("aeiouzAZ") + ["é", "ж", "日", "*", ".", "\\", "[", "1", " q ", "ß"]
SPLITTERS = ["Section", "SECTION", "Part", "Chapter", "PARAGRAPH", "*", "#", "第", "a.b", "("]


def script_text(rng: random.Random, n: int, script: str | None = None) -> str:
    """Words of one script (or of all of them), separated by spaces and sentence ends."""
    lo, hi = SCRIPTS[script or rng.choice(list(SCRIPTS))]
    words = ["".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))) for _ in range(n)]
    return "".join(w + rng.choice([" ", " ", ". ", "\n", ", "]) for w in words)


def count(rng: random.Random) -> Any:
    """A valid count, in every form the references use (int, integral float, digit string)."""
    n = rng.choice([0, 1, 2, 3, rng.randint(0, 40), rng.randint(0, 5000), 10**18])
    return rng.choice([n, n, n, float(n), str(n), f" {n} "])


def phrase(rng: random.Random) -> str:
    return rng.choice([rng.choice(PHRASES), script_text(rng, rng.randint(1, 3)).strip() or "x"])


def kwargs_for(rng: random.Random, instruction_id: str) -> dict[str, Any]:
    """Random valid kwargs for one instruction id (the suites' argument names).

    A draw the table rejects (a range whose ends came out reversed, a position of 0) is
    drawn again: only model output is fuzzed here.
    """
    for _ in range(50):
        kwargs = _draw_kwargs(rng, instruction_id)
        try:
            parse_reference({"instruction_id_list": [instruction_id], "kwargs": [kwargs]})
        except ValueError:
            continue
        return kwargs
    raise AssertionError(f"no valid kwargs drawn for {instruction_id}")


def _draw_kwargs(rng: random.Random, instruction_id: str) -> dict[str, Any]:
    relation = rng.choice(["less than", "at least"])
    draws: dict[str, Callable[[], Any]] = {
        "keywords": lambda: [phrase(rng) for _ in range(rng.randint(1, 5))],
        "forbidden_words": lambda: [phrase(rng) for _ in range(rng.randint(1, 30))],
        "keyword": lambda: phrase(rng),
        "topic_words": lambda: [phrase(rng) for _ in range(rng.randint(1, 4))],
        "letter": lambda: rng.choice(LETTERS),
        "language": lambda: rng.choice(LANGUAGES),
        "postscript_marker": lambda: rng.choice(["P.S.", "P.P.S", phrase(rng)]),
        "section_spliter": lambda: rng.choice(SPLITTERS),
        "first_word": lambda: rng.choice(WORDS + PHRASES[:4]),
        "prompt_to_repeat": lambda: rng.choice([phrase(rng), "Write about tea. " * 200]),
        "end_phrase": lambda: phrase(rng),
        "relation": lambda: relation,
        "let_relation": lambda: relation,
        "capital_relation": lambda: relation,
        "phrase": lambda: rng.choice(["the quick brown fox", "a b", phrase(rng)]),
        "last_word": lambda: rng.choice(WORDS + PHRASES[:4]),
        "word": lambda: phrase(rng),
        "reference_text": lambda: rng.choice([phrase(rng), "Write about tea. " * 50]),
        "options": lambda: rng.choice(["yes/no/maybe", "I know or I don't know", "a), b), c)"]),
        "sep": lambda: rng.choice(["...", "SEPARATOR", "!?!?", "-", phrase(rng)]),
        **{f"keyword{i}": (lambda: phrase(rng)) for i in range(1, 6)},
    }
    params = inspect.signature(CHECKS[instruction_id]).parameters
    kwargs = {
        n: draws.get(n, lambda: count(rng))() for n, p in params.items() if n != "response" and p.default is p.empty
    }
    if "nth_paragraph" in kwargs:  # must lie in 1..num_paragraphs
        total = max(1, int(float(kwargs["num_paragraphs"])) % 200)
        kwargs["num_paragraphs"], kwargs["nth_paragraph"] = total, rng.randint(1, total)
    if rng.random() < 0.2:
        kwargs.setdefault("language", None)  # an extra null argument: IFEval drops it
    return kwargs


def generated_reference(rng: random.Random) -> dict[str, Any]:
    # distinct ids, as in IFEval's rows; up to all 25 at once (the costliest valid reference)
    ids = rng.sample(sorted(CHECKS), rng.choice([1, 1, 2, 3, 5, 25]))
    kwargs = [kwargs_for(rng, i) for i in ids]
    return {"instruction_id_list": ids, "kwargs": kwargs, "prompt": "generated"}


# -- responses at a reference's boundaries --


def _n(value: Any) -> int | None:
    """A count argument's value (None for other arguments)."""
    try:
        return None if isinstance(value, bool) else int(float(value))
    except (TypeError, ValueError):
        return None


def at_boundary(rng: random.Random, instruction_id: str, kwargs: dict[str, Any]) -> str:
    """A response whose count is the argument's value, one less or one more (capped)."""
    numbers = [c for v in kwargs.values() if (c := _n(v)) is not None]
    base = min(numbers[0], 3000) if numbers else 1
    n = max(0, base + rng.choice([-1, 0, 0, 1]))
    word = str(kwargs.get("keyword") or kwargs.get("letter") or "word").strip()
    splitter = str(kwargs.get("section_spliter", "Section")).strip()
    makers: dict[str, Callable[[], str]] = {
        "length_constraints:number_words": lambda: " ".join(["w"] * n),
        "length_constraints:number_sentences": lambda: " ".join(["It is."] * n),
        "length_constraints:number_paragraphs": lambda: "\n***\n".join(["p"] * n),
        "length_constraints:nth_paragraph_first_word": lambda: "\n\n".join(
            f"{kwargs['first_word']} p" if i == _n(kwargs["nth_paragraph"]) - 1 else "p" for i in range(n)
        ),
        "detectable_content:number_placeholders": lambda: " ".join(["[x]"] * n),
        "detectable_format:number_highlighted_sections": lambda: " ".join(["*h*"] * n),
        "detectable_format:multiple_sections": lambda: "\n".join(f"{splitter} {i}\ntext" for i in range(1, n + 1)),
        "detectable_format:number_bullet_lists": lambda: "\n".join(["* b"] * n),
        "change_case:capital_word_frequency": lambda: " ".join(["NASA"] * n),
        "keywords:letter_frequency": lambda: word * n,
        "keywords:frequency": lambda: f" {word} " * n,
        "combination:two_responses": lambda: "one\n******\ntwo",
        "detectable_format:json_format": lambda: json.dumps({"a": [1] * n}),
        "detectable_format:title": lambda: "<<Title>>\ntext",
        "startend:quotation": lambda: '"quoted"',
        "startend:end_checker": lambda: f"text {kwargs['end_phrase']}",
        "combination:repeat_prompt": lambda: f"{kwargs['prompt_to_repeat']} answer",
        "detectable_content:postscript": lambda: f"text\n{kwargs['postscript_marker']} more",
        "detectable_format:constrained_response": lambda: "My answer is yes.",
        "keywords:existence": lambda: " ".join(kwargs["keywords"]),
        "language:response_language": lambda: script_text(rng, n),
    }
    return makers.get(instruction_id, lambda: "the tea is hot")()


def json_text(rng: random.Random) -> str:
    """Deep, malformed or borderline JSON, bare or fenced (the json_format instruction)."""
    depth = rng.choice([10, 1000, 5000, 100_000])
    body = rng.choice(
        [
            "[" * depth + "]" * depth,
            '{"a":' * depth + "1" + "}" * depth,
            "[" * depth,
            '{"a": 1,}',
            '{"a": NaN}',
            '{"a": Infinity}',
            "9" * 10_000,
            '"\\ud800"',
            '{"a": 1}{}',
            '{"a": 1, "a": 2}',
            "[1, 2",
            "{'a': 1}",
            "null",
            '""',
            "1e999",
            "\x00",
            '{"\x00": 1}',
        ]
    )
    fence = rng.choice(["", "```json\n", "```JSON\n", "```\n", "```Json"])
    return fence + body + rng.choice(["", "\n```", "```", "\n``"])


def many(rng: random.Random) -> str:
    """Thousands of paragraphs, sections, bullets, placeholders, titles or asterisks."""
    n = rng.choice([1000, 5000, 20_000])
    unit = rng.choice(
        [
            "para\n\n",
            "\n***\n",
            "Section 1\n",
            "SECTION 99 ",
            "* item\n",
            "- item\n",
            "*\n",
            "[p]",
            "[",
            "*h*",
            "**b**",
            "*",
            "<<t>>\n",
            "<<",
            "******\n",
            "P.S. ",
            "It is. ",
            "NASA ",
            "My answer is yes. ",
            ",",
            '"',
            "\n",
            "a",
            "1. Item\n",
        ]
    )
    return unit * n


def hostile(rng: random.Random, kind: str, reference: dict[str, Any], real: list[str]) -> str:
    """One response of the named kind for ``reference``."""
    if kind == "boundary":
        index = rng.randrange(len(reference["instruction_id_list"]))
        kwargs = reference["kwargs"][index] or {}
        return at_boundary(rng, reference["instruction_id_list"][index], kwargs)
    if kind == "real":
        return rng.choice(real) if real else "the tea is hot"
    if kind == "huge":  # a few dozen distinct megabyte texts, shared: memory stays bounded
        text = huge_text(rng)
        return _HUGE.setdefault((text[:8], len(text)), text)
    if kind == "binary":
        return binary_text(rng, rng.randint(1, 5000))
    if kind == "scripts":
        return rng.choice([script_text(rng, rng.randint(1, 300)), unicode_text(rng, 500)])
    if kind == "many":
        return many(rng)
    if kind == "json":
        return json_text(rng)
    return rng.choice(["", " ", "\n", "\t\n ", "\x00", "\ud800", "*", "***", "<think>"])


_HUGE: dict[tuple[str, int], str] = {}
KINDS = ("boundary", "boundary", "real", "huge", "binary", "scripts", "many", "json", "empty")


def response(rng: random.Random, reference: dict[str, Any], real: list[str]) -> tuple[str, str]:
    """(kind, text): a hostile or boundary response, sometimes behind a reasoning section."""
    kind = rng.choice(KINDS)
    text = hostile(rng, kind, reference, real)
    if kind == "huge":
        return kind, text
    if rng.random() < 0.15:
        return f"{kind}+think", with_think(rng, text)
    if rng.random() < 0.1:  # a preamble and a sign-off: what loose mode forgives
        text = f"Sure, here it is:\n{text}\nHope this helps!"
    return kind, text


def checked(reference: dict[str, Any]) -> dict[str, Any]:
    """The reference, after checking it is valid: only model output is fuzzed here."""
    parse_reference(reference)
    return reference
