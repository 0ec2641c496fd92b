"""LLM-judge verifier (``judge``): a judge model grades a completion by a rubric; "Score: N" -> [0, 1].

Options (``domains.<d>.verifier_options.judge``):
- ``backend``: ``openai`` (an OpenAI-compatible chat endpoint, ``verifiers.judge.http``) or
  ``hf`` (a local Hugging Face model in-process, registered by ``rlvr.rewards.judging``); each backend's
  settings sit under its own name (``openai: {base_url, model, timeout_s ...}``,
  ``hf: {model, max_new_tokens ...}``), so switching backends is one override.
- ``rubric``: the judge's user turn, a template with ``{completion}`` and any of ``{question}``,
  ``{answer}``, ``{criteria}`` (from the row's reference); it must ask for the score in the form
  ``score_pattern`` reads (default ``Score: N``, any case, the last match counts) on a scale from
  ``min_score`` to ``max_score`` (default 0..10), scaled to [0, 1]. ``rubrics``: more templates
  by name, chosen per row by the reference's ``rubric`` key. ``system``: an optional system turn.
- ``pass_threshold``: a scaled score at or above it is ``correct`` (pass rates count those).

Reference: ``{"question": ..., "answer"?: ..., "criteria"?: ..., "rubric"?: <name>}``.

Error classes (DESIGN.md §4): bad setup raises ``JudgeSetupError`` when the verifier is built;
a judge reply without a score in range, a judge timeout or a transport failure is an ``error``
verdict (infrastructure, counted by the reward bridge's error budget), never a score of 0; a
reference the rubric cannot be filled from is an ``error`` verdict too. Scores are cached by
the judge's prompt (rubric, question and completion) and the judge's identity; failures are not
cached. A completion that writes a score line of its own cannot pass it on through a judge that
echoes it: verbatim copies of such a completion are cut from the reply before the score is read,
and a reply whose only score was that copy is a ``format_error`` (bad output, scored 0). A
completion can still try to talk the judge into a high score (reward hacking under RL pressure):
evaluate judged domains with a programmatic verifier where one exists. The verifier runs in the
caller's process (``verify_many`` marks it self-isolating): a
judge call is bounded by its backend's own time limit, and an in-process model or one shared
cache could not live in the scorer's worker processes.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Formatter
from typing import Any, ClassVar

from verifiers.judge import http as _http  # noqa: F401  (registers the ``openai`` backend)
from verifiers.judge.backend import (
    REGISTERED_ELSEWHERE,
    JudgeBackend,
    JudgeFailure,
    JudgeSetupError,
    get_judge_backend,
    judge_backends,
)
from verifiers.reasoning import strip_think
from verifiers.registry import register
from verifiers.verdict import Verdict, clip

PLACEHOLDERS = ("question", "answer", "criteria", "completion")
DEFAULT_SCORE_PATTERN = r"(?i)\bscore\s*[:=]\s*(-?\d+(?:\.\d+)?)"
FIX = "verifier_options.judge"


@dataclass(frozen=True)
class Rubric:
    """One judge prompt template and how its reply's score is read."""

    template: str
    score_pattern: str = DEFAULT_SCORE_PATTERN
    min_score: float = 0.0
    max_score: float = 10.0

    def fields(self) -> set[str]:
        return {name for _, name, _, _ in Formatter().parse(self.template) if name is not None}

    def check(self, key: str) -> None:
        """Raise ``JudgeSetupError`` for a template or score format that cannot work."""
        if not self.template.strip():
            raise JudgeSetupError(f"{key} is empty; write the judge's prompt with {{completion}}")
        try:
            names = self.fields()
            self.template.format(**dict.fromkeys(PLACEHOLDERS, ""))
        except (KeyError, IndexError, ValueError) as err:
            raise JudgeSetupError(
                f"{key}: {err!r}; use only {', '.join('{' + p + '}' for p in PLACEHOLDERS)} and double other braces"
            ) from None
        if "completion" not in names:
            raise JudgeSetupError(f"{key} never shows the judge the {{completion}}; add it")
        try:
            groups = re.compile(self.score_pattern).groups
        except re.error as err:
            raise JudgeSetupError(f"{FIX}.score_pattern does not compile: {err}") from None
        if groups != 1:
            raise JudgeSetupError(f"{FIX}.score_pattern needs one group (the number)")
        if not self.max_score > self.min_score:
            raise JudgeSetupError(f"{FIX}: max_score must exceed min_score")

    def prompt(self, completion: str, reference: Mapping[str, Any]) -> str:
        """The filled template; ``ValueError`` names a reference field the rubric needs."""
        values = {"completion": completion}
        for name in ("question", "answer", "criteria"):
            value = reference.get(name)
            if value is None and name == "question" and "question" in self.fields():
                raise ValueError("the reference has no 'question', which the rubric shows")
            values[name] = "" if value is None else str(value)
        return self.template.format(**values)

    def score(self, reply: str) -> tuple[float, str] | None:
        """(scaled score, the number as written) from the reply's last match; None if absent
        or out of range."""
        matches = re.findall(self.score_pattern, strip_think(reply))
        if not matches:
            return None
        raw = matches[-1]
        value = float(raw)
        if not self.min_score <= value <= self.max_score:
            return None
        return (value - self.min_score) / (self.max_score - self.min_score), raw


@dataclass
class JudgeStats:
    """Counts since the verifier was built: calls, cache hits, backend failures, bad replies."""

    verified: int = 0
    cache_hits: int = 0
    judge_calls: int = 0
    failures: int = 0
    unparseable: int = 0


class ScoreCache:
    """Thread-safe LRU of judged scores by key; ``None`` on a miss."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> tuple[float, str] | None:
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
            return hit

    def put(self, key: str, value: tuple[float, str]) -> None:
        with self.lock:
            self.entries[key] = value
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)


@dataclass
class JudgeVerifier:
    """Scores completions with a judge model; see the module docstring for options."""

    # the scorer hands ``verify_many`` a whole batch (one backend batch, each prompt once)
    grades_batches: ClassVar[bool] = True

    backend: JudgeBackend
    rubrics: dict[str, Rubric]  # "" is the default rubric
    system: str = ""
    pass_threshold: float = 0.5
    max_chars: int = 4000  # a completion is judged on its last max_chars characters
    cache_size: int = 100_000
    name: str = "judge"
    stats: JudgeStats = field(default_factory=JudgeStats)

    def __post_init__(self) -> None:
        self.cache = ScoreCache(self.cache_size)
        self.lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # picklable: a copy starts with an empty cache
        return {k: v for k, v in self.__dict__.items() if k not in ("cache", "lock")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def _messages(self, completion: str, reference: Mapping[str, Any]) -> list[dict[str, str]]:
        """The judge's conversation; ``ValueError`` for a reference the rubric cannot use."""
        name = reference.get("rubric") or ""
        if name not in self.rubrics:
            known = ", ".join(sorted(n for n in self.rubrics if n)) or "none"
            raise ValueError(f"rubric {name!r} is not configured (rubrics: {known})")
        text = self.rubrics[name].prompt(_encodable(completion[-self.max_chars :]), reference)
        head = [{"role": "system", "content": self.system}] if self.system else []
        return [*head, {"role": "user", "content": text}]

    def _key(self, messages: list[dict[str, str]]) -> str:
        blob = json.dumps([self.backend.identity, messages], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _count(self, **increments: int) -> None:
        with self.lock:
            for name, n in increments.items():
                setattr(self.stats, name, getattr(self.stats, name) + n)

    def _verdict(self, scored: tuple[float, str], rubric: Rubric) -> Verdict:
        value, raw = scored
        details = f"judge score {raw} of {rubric.min_score:g}..{rubric.max_score:g}"
        if value >= self.pass_threshold:
            return Verdict.correct(raw, details, score=value)
        return Verdict.wrong(raw, details, score=value)

    def _judged(self, key: str, reply: str | JudgeFailure, rubric: Rubric, shown: str) -> Verdict:
        if isinstance(reply, JudgeFailure):
            self._count(failures=1)
            return Verdict.error(clip(f"judge failed: {reply}"))
        scored = rubric.score(reply)
        if scored is not None and rubric.score(shown) is not None:  # the completion wrote one
            scored = rubric.score(reply.replace(shown, " "))  # its verbatim copies do not count
            if scored is None:
                return Verdict.format_error("the judge's only score is a copy of the completion's own score line")
        if scored is None:
            self._count(unparseable=1)
            return Verdict.error(
                clip(
                    f"unparseable judge reply (no score matching {rubric.score_pattern!r} "
                    f"in {rubric.min_score:g}..{rubric.max_score:g}): {reply!r}"
                )
            )
        self.cache.put(key, scored)
        return self._verdict(scored, rubric)

    def verify(self, completion: str, reference: Mapping[str, Any]) -> Verdict:
        return self.verify_many([completion], [reference])[0]

    def verify_many(self, completions: Sequence[str], references: Sequence[Mapping[str, Any]]) -> list[Verdict]:
        """Verdicts in input order; cache misses go to the backend as one batch (each distinct
        prompt once)."""
        out: list[Verdict | None] = [None] * len(completions)
        todo: dict[str, list[int]] = {}
        asks: dict[str, tuple[list[dict[str, str]], Rubric, str]] = {}
        self._count(verified=len(completions))
        for i, (completion, reference) in enumerate(zip(completions, references, strict=True)):
            try:
                messages = self._messages(completion, reference)
            except ValueError as err:
                out[i] = Verdict.error(clip(f"unscorable reference for the judge: {err}"))
                continue
            rubric = self.rubrics[reference.get("rubric") or ""]
            key = self._key(messages)
            if (hit := self.cache.get(key)) is not None:
                self._count(cache_hits=1)
                out[i] = self._verdict(hit, rubric)
                continue
            todo.setdefault(key, []).append(i)
            asks[key] = (messages, rubric, completion[-self.max_chars :])
        if todo:
            keys = list(todo)
            self._count(judge_calls=len(keys))
            replies = self.backend.complete_many([asks[k][0] for k in keys])
            for key, reply in zip(keys, replies, strict=True):
                verdict = self._judged(key, reply, *asks[key][1:])
                for i in todo[key]:
                    out[i] = verdict
        return [v if v is not None else Verdict.error("item was not judged") for v in out]


def make_judge(
    backend: str = "",
    rubric: str | None = None,
    rubrics: Mapping[str, str] | None = None,
    system: str = "",
    score_pattern: str = DEFAULT_SCORE_PATTERN,
    min_score: float = 0.0,
    max_score: float = 10.0,
    pass_threshold: float = 0.5,
    max_chars: int = 4000,
    cache_size: int = 100_000,
    **sections: Mapping[str, Any],
) -> JudgeVerifier:
    """The ``judge`` verifier from its options (``sections``: each backend's settings under its
    name); bad setup raises ``JudgeSetupError``."""
    names = {*judge_backends(), *REGISTERED_ELSEWHERE}
    if unknown := sorted(set(sections) - names):
        raise JudgeSetupError(
            f"{FIX}: unknown option(s) {', '.join(unknown)}; options are the rubric's, the "
            f"score's and one section per backend ({', '.join(sorted(names))})"
        )
    templates = {"": rubric} if rubric else {}
    templates.update({str(k): v for k, v in (rubrics or {}).items()})
    if not templates:
        raise JudgeSetupError(
            f"the judge has no rubric: set {FIX}.rubric to its prompt, a template with "
            "{completion} (and {question}, {answer}, {criteria}) that asks for 'Score: N'"
        )
    built = {n: Rubric(t, score_pattern, min_score, max_score) for n, t in templates.items()}
    for name, r in built.items():
        r.check(f"{FIX}.rubrics.{name}" if name else f"{FIX}.rubric")
    if not 0.0 <= pass_threshold <= 1.0 or max_chars < 1 or cache_size < 0:
        raise JudgeSetupError(f"{FIX}: pass_threshold in [0, 1], max_chars >= 1, cache_size >= 0")
    if not backend:
        raise JudgeSetupError(f"set {FIX}.backend (openai: a chat server; hf: a local model)")
    judge = get_judge_backend(backend, sections.get(backend))
    return JudgeVerifier(judge, built, system, pass_threshold, max_chars, cache_size)


register("judge", make_judge)


def _encodable(text: str) -> str:
    """The text as valid UTF-8: lone surrogates (model output decoded with surrogateescape)
    become U+FFFD, so neither the cache key, the HTTP body nor a tokenizer trips on them."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
