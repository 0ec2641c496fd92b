"""Self-verification: every model as a generative judge of completions our verifiers labelled.

The labelled completions are evaluation samples (``<study>/eval/<label>/<benchmark>.jsonl``) of
``analyze.judge.sources`` (every evaluated model when empty): per domain a seeded draw of
``analyze.judge.completions``, half with the verdict ``correct`` where there are enough, the
rest not correct (wrong, format error, timeout). Each model judges each one greedily, in two
modes: *outcome* sees the task and the extracted final answer, *process* the task and the whole
response; the prompts are ``analyze.judge.templates``. With ``scoring=probability`` (the
default) the judgement is the word list, ``correct_words`` or ``wrong_words``, holding more of
the reply's first-token probability (``rlvr.analysis.judge_odds``): one forward pass, and a
judgement from every model, however small. With ``scoring=reply`` the model generates and the
reply's first word from either list decides; a reply with neither is *unparseable*, counted,
and scored as a wrong judgement. Judge accuracy is the share of judgements that agree with
the label; the base rate beside it is the share labelled correct, which is exactly what a
judge that always says "correct" scores.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlvr.analysis.charts import judge_figure
from rlvr.analysis.evaluations import Evaluations, heldout_rows
from rlvr.analysis.outputs import Output
from rlvr.config import ConfigError, RunConfig
from rlvr.config.analysis import JudgeConfig
from rlvr.reporting.tables import Table

log = logging.getLogger(__name__)
MODES = ("outcome", "process")
SCORINGS = ("probability", "reply")


@dataclass(frozen=True)
class Labelled:
    domain: str
    question: str
    answer: str  # the verifier's extracted answer ("" when there was none)
    completion: str
    correct: bool  # the verifier's verdict


def check(c: JudgeConfig) -> None:
    if c.scoring not in SCORINGS:
        raise ConfigError(f"analyze.judge.scoring: unknown {c.scoring!r}; known: {', '.join(SCORINGS)}")
    if bad := [m for m in c.modes if m not in MODES]:
        raise ConfigError(f"analyze.judge.modes: unknown {bad}; known: {', '.join(MODES)}")
    for mode in c.modes:
        if mode not in c.templates:
            raise ConfigError(f"analyze.judge.templates.{mode} is missing (see conf/analyze/default.yaml)")
        try:
            c.templates[mode].format(question="", answer="", completion="")
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(
                f"analyze.judge.templates.{mode}: {err!r}; use only {{question}}, {{answer}} "
                "and {completion}, and double other braces"
            ) from None
    if not (c.completions >= 1 and c.max_new_tokens >= 1 and c.correct_words and c.wrong_words):
        raise ConfigError("analyze.judge: completions and max_new_tokens >= 1, and both word lists")


def parse(reply: str, correct_words: Sequence[str], wrong_words: Sequence[str]) -> bool | None:
    """True / False by the first verdict word after any reasoning; None when there is none."""
    text = reply.rsplit("</think>", 1)[-1].lower()
    words = sorted({*correct_words, *wrong_words}, key=len, reverse=True)
    pattern = r"\b(" + "|".join(re.escape(w.lower()) for w in words) + r")\b"
    match = re.search(pattern, text)
    if match is None:
        return None
    return match[1] in {w.lower() for w in correct_words}


def score(items: Sequence[Labelled], judged: Sequence[bool | None]) -> tuple[float, int]:
    """(accuracy, unparseable): an unparseable judgement counts as wrong."""
    agree = sum(j is not None and j == x.correct for x, j in zip(items, judged, strict=True))
    return agree / len(items), sum(j is None for j in judged)


def _judged_records(records: list[dict]) -> list[dict]:
    """The sampled completions of an evaluation, or its greedy ones where it decoded greedily
    alone (``eval.temperature=0``), so a greedy-only study still has samples to judge."""
    sampled = [r for r in records if r.get("mode") == "sample"]
    return sampled or [r for r in records if r.get("mode") == "greedy"]


def draw(evals: Evaluations, run: RunConfig) -> dict[str, list[Labelled]]:
    """Per domain, the labelled completions to judge (half correct where possible)."""
    c = run.analyze.judge
    sources = c.sources or [r.label for r in evals.results]
    rng = random.Random(c.seed)
    pools: dict[str, list[Labelled]] = {}
    for domain, bench in evals.benchmarks:
        prompts = {r["id"]: r["prompt"] for r in heldout_rows(run, bench)}
        for label in sources:
            for rec in _judged_records(evals.records(label, bench)):
                if rec["id"] in prompts:
                    question = next(
                        (m["content"] for m in reversed(prompts[rec["id"]]) if m["role"] == "user"),
                        "",
                    )
                    pools.setdefault(domain, []).append(
                        Labelled(
                            domain, question, rec.get("extracted") or "", rec["completion"], rec["status"] == "correct"
                        )
                    )
    out = {}
    for domain, pool in pools.items():
        rng.shuffle(pool)
        right = [x for x in pool if x.correct]
        wrong = [x for x in pool if not x.correct]
        n = min(c.completions, len(pool))
        take = min(len(right), n // 2)
        take = max(take, n - len(wrong))
        out[domain] = [*right[:take], *wrong[: n - take]]
    return out


def prompt(item: Labelled, mode: str, c: JudgeConfig) -> list[dict]:
    text = c.templates[mode].format(
        question=item.question,
        answer=item.answer or "(none)",
        completion=item.completion[-c.max_chars :],
    )
    return [{"role": "user", "content": text}]


class SelfVerification:
    name = "judge"

    def __init__(self, run: RunConfig, evals: Evaluations) -> None:
        check(run.analyze.judge)
        self.run, self.evals = run, evals
        self.models = list(evals.results)

    def judge(self, model, tokenizer, items: list[Labelled], mode: str) -> list[bool | None]:
        from rlvr.evaluation.generation import Decoding, generate, prompt_ids
        from rlvr.models.chat_format import ChatFormat

        c = self.run.analyze.judge
        if c.scoring == "probability":
            from rlvr.analysis.judge_odds import verdict_log_odds, verdict_tokens

            right, wrong = verdict_tokens(tokenizer, c.correct_words, c.wrong_words)
            ids = prompt_ids(tokenizer, [prompt(x, mode, c) for x in items], ChatFormat.of(self.run.model))
            odds = verdict_log_odds(model, tokenizer, ids, right, wrong, c.batch_size)
            return [o > 0 for o in odds]
        decoding = Decoding(greedy=True, max_new_tokens=c.max_new_tokens)
        replies = generate(
            model,
            tokenizer,
            [prompt(x, mode, c) for x in items],
            decoding,
            c.batch_size,
            chat=ChatFormat.of(self.run.model),
        )
        return [parse(r[0], c.correct_words, c.wrong_words) for r in replies]

    def measure(self, pools: dict[str, list[Labelled]]) -> list[tuple]:
        from rlvr.analysis.kl import load
        from rlvr.models.loading import load_tokenizer

        c = self.run.analyze.judge
        rows = []
        for r in self.models:
            path = self.evals.model_path(r)
            model, tokenizer = load(path, self.run), load_tokenizer(path, self.run.model)
            for mode in c.modes:
                cells, unparseable = [], 0
                every: tuple[list[Labelled], list[bool | None]] = ([], [])
                for items in pools.values():
                    judged = self.judge(model, tokenizer, items, mode)
                    accuracy, bad = score(items, judged)
                    cells.append(100.0 * accuracy)
                    unparseable += bad
                    every[0].extend(items), every[1].extend(judged)
                says = 100.0 * sum(j is True for j in every[1]) / len(every[1])
                rows.append((r.label, r.role, mode, *cells, 100.0 * score(*every)[0], says, unparseable))
            del model
        return rows

    def write(self, out_dir: Path) -> Output:
        pools = draw(self.evals, self.run)
        if not pools:
            raise ConfigError("analyze.judge: no evaluation samples of analyze.judge.sources to judge")
        items = [x for pool in pools.values() for x in pool]
        rates = [100.0 * sum(x.correct for x in p) / len(p) for p in pools.values()]
        overall = 100.0 * sum(x.correct for x in items) / len(items)
        rows = [("base rate (share labelled correct)", "", "", *rates, overall, None, None)]
        rows += self.measure(pools)
        table = Table(
            "judge",
            "Self-verification: judge accuracy (%) per domain and mode, base rate first",
            ("judge", "role", "mode", *pools, "all", "says correct %", "unparseable"),
            tuple(rows),
            (
                f"{len(items)} labelled completions ({', '.join(f'{d} {len(p)}' for d, p in pools.items())}); "
                "labels: our verifiers' verdicts; "
                + (
                    "judgement: the word list with more first-token probability"
                    if self.run.analyze.judge.scoring == "probability"
                    else "judgement: the reply's first verdict word; unparseable counts as wrong"
                ),
            ),
        )
        series = [f"{d} {m}" for m in self.run.analyze.judge.modes for d in pools]
        by_model: dict[str, list[float | None]] = {}
        for row in rows[1:]:
            by_model.setdefault(row[0], []).extend(v / 100.0 for v in row[3 : 3 + len(pools)])
        base = [r / 100.0 for _ in self.run.analyze.judge.modes for r in rates]
        figure = judge_figure(list(by_model), list(by_model.values()), series, base, out_dir / "judge.png")
        return Output(self.name, (table,), (figure,))
