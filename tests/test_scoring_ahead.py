"""Scoring ahead (rlvr.rewards.early): the sampler reports rows as they end, the bridge grades
them on a background thread while the batch decodes, and TRL's reward call grades only the
rest, with the verdicts it would have got anyway."""

from __future__ import annotations

import json
import threading
from typing import Any

from test_single_turn_rollouts import build_trainer, model_dir, prompt_batch  # noqa: F401

from rlvr.evaluation.sampling import Sampler
from rlvr.rewards.bridge import ErrorBudget, StepTimer, build_reward_functions
from rlvr.rewards.scoring import sequential_scorer
from rlvr.rollouts.single_turn import sample_rows
from tasks import micro
from verifiers import ReasoningFormat


class CountingScorer:
    """The real sequential scorer, recording which texts each call graded and from where."""

    def __init__(self) -> None:
        self.scorer = sequential_scorer(ReasoningFormat())
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, items):
        self.calls.append((threading.current_thread().name, [text for text, _, _ in items]))
        return self.scorer(items)


def reward_kwargs(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {key: [r[key] for r in rows] for key in ("domain", "verifier", "reference", "id")}


def ending_token(model, batch) -> int:
    """A token some greedy rows hold and others not, first at different places: as the end
    token, rows end at different steps and some run to the limit."""
    free = sample_rows(model, batch, Sampler(24, (-1,), 0, greedy=True), None)[0]
    return next(
        t
        for t in sorted({t for c in free for t in c})
        if any(t not in c for c in free) and len({c.index(t) for c in free if t in c}) > 1
    )


def test_the_sampler_reports_each_early_row_once_with_its_final_ids(model_dir, tmp_path):  # noqa: F811
    trainer, rows = build_trainer(model_dir, tmp_path, True)
    assert trainer.score_ahead is False  # by default only beside an accelerator
    model = trainer.model
    batch = prompt_batch(trainer, rows, [i for i in range(6) for _ in range(4)])
    end = ending_token(model, batch)
    heard: list[tuple[int, list[int]]] = []
    greedy = Sampler(24, (end,), 0, greedy=True)
    ids, _ = sample_rows(model, batch, greedy, None, on_finished=lambda r, i: heard.extend(zip(r, i, strict=True)))
    assert ids == sample_rows(model, batch, greedy, None)[0]  # listening changes nothing
    reported = [row for row, _ in heard]
    assert reported and len(reported) == len(set(reported))
    for row, got in heard:
        assert got == ids[row] and got[-1] == end and len(got) < 24
    assert any(len(ids[r]) == 24 for r in set(range(len(batch))) - set(reported))


def test_rows_scored_ahead_are_not_scored_again_and_keep_their_verdicts():
    rows = micro.generate("math", 12, seed=0, difficulty=1, split="train")
    golds = [json.loads(r["reference"])["answer"] for r in rows]
    texts = [f"Answer: {g}" if i % 3 else f"Answer: {g}1" for i, g in enumerate(golds)]
    expected = build_reward_functions(
        ["math"], sequential_scorer(ReasoningFormat()), ErrorBudget(0.05, 1), StepTimer()
    )[0](["q"] * len(rows), texts, **reward_kwargs(rows))
    assert 0.0 in expected and 1.0 in expected

    scorer, timer = CountingScorer(), StepTimer()
    (reward,) = build_reward_functions(["math"], scorer, ErrorBudget(0.05, 1), timer)
    early = reward.batch_scores.early
    ahead = [(i, texts[i], rows[i]["reference"], rows[i]["verifier"]) for i in range(6)]
    ahead[5] = (5, "Answer: 999999", *ahead[5][2:])  # not what TRL will hand over: regraded
    early.submit(ahead[:3])
    early.submit(ahead[3:])
    assert reward(["q"] * len(rows), texts, **reward_kwargs(rows)) == expected
    background = [texts for thread, texts in scorer.calls if thread.startswith("rlvr-early")]
    on_call = [texts for thread, texts in scorer.calls if not thread.startswith("rlvr-early")]
    assert sum(len(t) for t in background) == 6
    distinct = {(texts[i], rows[i]["reference"]): texts[i] for i in [5, *range(6, len(rows))]}
    assert on_call == [list(distinct.values())]  # the rest, identical rows once
    assert timer.ahead_s > 0
    # the next batch starts with nothing ahead: every row graded on the call
    scorer.calls.clear()
    assert reward(["q"] * len(rows), list(texts), **reward_kwargs(rows)) == expected
    assert [len(t) for _, t in scorer.calls] == [len({(t, r["reference"]) for t, r in zip(texts, rows, strict=True)})]
    early.close()


def test_grpo_scores_early_rows_ahead_and_each_completion_once(model_dir, tmp_path):  # noqa: F811
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from rlvr.models import tiny as tiny_model
    from rlvr.training.grpo import RLVRGRPOTrainer

    rows = micro.generate("math", 6, seed=2, split="heldout")
    scorer, timer, budget = CountingScorer(), StepTimer(), ErrorBudget(0.05, 1)
    trainer = RLVRGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        processing_class=tiny_model.build_tokenizer(),
        reward_funcs=build_reward_functions(["math"], scorer, budget, timer),
        args=GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=12,
            num_generations=4,
            max_completion_length=24,
            temperature=1e-4,
            top_k=0,
            beta=0.0,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            seed=0,
            max_steps=2,
            learning_rate=1e-5,
        ),
        train_dataset=Dataset.from_list(rows),
        score_ahead=True,  # on CPU the default grades after generation
    )
    batch = prompt_batch(trainer, rows, list(range(6)))
    trainer.eos_token_ids = [*trainer.eos_token_ids, ending_token(trainer.model, batch)]
    trainer.train()
    background = sum(len(t) for thread, t in scorer.calls if thread.startswith("rlvr-early"))
    total = sum(len(t) for _, t in scorer.calls)
    assert budget.seen["math"] == 2 * 12  # two steps of 3 prompts x 4 completions, all scored
    assert 0 < background < total <= 2 * 12  # none graded twice
    assert timer.ahead_s > 0


def test_identical_rows_are_graded_once_and_share_the_verdict():
    rows = micro.generate("math", 40, seed=1, difficulty=1, split="train")
    rows = list({r["reference"]: r for r in rows}.values())[:4]  # four different problems
    golds = [json.loads(r["reference"])["answer"] for r in rows]
    batch = [r for r in rows for _ in range(4)]  # a group of four samples per prompt
    texts = [f"Answer: {golds[i // 4]}" if i % 4 < 2 else f"Answer: {1000 + i}" for i in range(16)]
    scorer = CountingScorer()
    (reward,) = build_reward_functions(["math"], scorer, ErrorBudget(0.05, 1), StepTimer())
    scores = reward(["q"] * 16, texts, **reward_kwargs(batch))
    graded = [t for _, call in scorer.calls for t in call]
    assert len(graded) == 12  # per prompt: the right answer once, two distinct wrong ones
    assert scores == [1.0 if i % 4 < 2 else 0.0 for i in range(16)]
    # the same text under another prompt is another item: graded against its own reference
    scorer.calls.clear()
    same = ["Answer: " + golds[0]] * 16
    scores = reward(["q"] * 16, same, **reward_kwargs(batch))
    assert len([t for _, call in scorer.calls for t in call]) == 4
    assert scores[:4] == [1.0] * 4 and all(s == float(golds[i // 4] == golds[0]) for i, s in enumerate(scores))
