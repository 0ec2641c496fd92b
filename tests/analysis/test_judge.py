"""Self-verification with real generation: a tiny model built to answer "yes" to everything
scores exactly the base rate; replies are parsed by their first verdict word; an unparseable
one is counted and scored wrong; bad templates fail before any model loads."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import write_eval

from rlvr.analysis.evaluations import load as load_evaluations
from rlvr.analysis.judge import Labelled, SelfVerification, draw, parse, score
from rlvr.analysis.judge_odds import verdict_log_odds, verdict_tokens
from rlvr.config import ConfigError, RunConfig
from rlvr.study.commands import compose

WORDS = (["correct", "right", "yes"], ["incorrect", "wrong", "no"])


def _run() -> RunConfig:
    from omegaconf import OmegaConf

    run = OmegaConf.to_object(compose(["run_name=t", "logger=none", "eval.max_prompts=4"]))
    run.analyze.judge.completions, run.analyze.judge.max_new_tokens = 6, 6
    return run


def yes_model(tiny_model_dir, folder):
    """The tiny model rewired to reply "yes" to any prompt: every layer's output projections
    are zero (the residual stream is the last token's embedding), and the embeddings of
    newline, y, e, s and the end token are set so that each one's successor scores highest:
    a symmetric score matrix S = E^T diag(g) E, with g the final norm's weight."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    chain = [*tokenizer.encode("\nyes", add_special_tokens=False), tokenizer.eos_token_id]
    n = len(chain)
    s = torch.zeros(n, n)
    for i in range(n - 1):  # successor scores rise along the chain: row i's maximum is i + 1
        s[i, i + 1] = s[i + 1, i] = float(i + 1)
    values, vectors = torch.linalg.eigh(s)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed = model.model.embed_tokens.weight
        embed.zero_()
        embed[chain, :n] = (vectors * values.abs().sqrt()).to(embed.dtype)
        model.model.norm.weight.zero_()
        model.model.norm.weight[:n] = torch.sign(values)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("correct", True),
        ("Wrong.", False),
        ("It is incorrect", False),
        ("yes, right", True),
        ("<think>correct</think> no", False),
        ("", None),
        ("corrects nothing", None),
        ("answer: Right", True),
    ],
)
def test_the_first_verdict_word_decides(reply, verdict):
    assert parse(reply, *WORDS) is verdict


def test_always_correct_scores_the_base_rate_and_unparseable_counts_wrong():
    items = [Labelled("math", "q", "a", "c", correct) for correct in (True, False, False, True, False)]
    assert score(items, [True] * 5) == (2 / 5, 0)
    assert score(items, [None] * 5) == (0.0, 5)
    assert score(items, [x.correct for x in items]) == (1.0, 0)


@pytest.fixture
def study(tmp_path, tiny_model_dir):
    yes = yes_model(tiny_model_dir, tmp_path / "yes")
    from rlvr.analysis.evaluations import heldout_rows

    run = _run()
    ids = [r["id"] for r in heldout_rows(run, "micro_math")]
    scores = {ids[0]: [1.0, 0.0], ids[1]: [0.0, 0.0], ids[2]: [1.0, 1.0]}  # 3 of 6 correct
    write_eval(tmp_path, "sft", "micro_math", scores, str(tiny_model_dir))
    write_eval(tmp_path, "math-seed0", "micro_math", {ids[3]: [0.0, 0.0]}, str(yes))
    return tmp_path


@pytest.mark.parametrize("scoring", ["probability", "reply"])
def test_a_judge_that_always_says_yes_scores_exactly_the_base_rate(study, scoring):
    run = _run()
    run.analyze.judge.scoring = scoring
    out = SelfVerification(run, load_evaluations(study, "judge")).write(study / "analysis")
    rows = out.tables[0].rows
    base = rows[0]
    assert base[0].startswith("base rate") and base[3] == pytest.approx(50.0)  # 3 of 6 drawn
    yes = {r[2]: r for r in rows if r[0] == "math-seed0"}
    for mode in ("outcome", "process"):
        # math, all, says correct %, unparseable
        assert yes[mode][3:] == (pytest.approx(base[3]), pytest.approx(base[4]), 100.0, 0)
    for row in (r for r in rows if r[0] == "sft"):  # the untrained tiny model: mostly noise
        assert 0 <= row[-1] <= 6 and 0.0 <= row[3] <= 100.0
    assert out.images[0].read_bytes()[:4] == b"\x89PNG"


def test_bad_templates_fail_before_any_model_loads(study):
    run = _run()
    run.analyze.judge.templates["outcome"] = "Is {answr} right?"
    with pytest.raises(ConfigError, match="templates.outcome: KeyError"):
        SelfVerification(run, load_evaluations(study, "judge"))
    run = _run()
    run.analyze.judge.modes = ["outcome", "steps"]
    with pytest.raises(ConfigError, match=r"unknown \['steps'\]; known: outcome, process"):
        SelfVerification(run, load_evaluations(study, "judge"))


def test_a_greedy_only_evaluation_still_gives_samples_to_judge(study):
    """``eval.temperature=0`` records only greedy completions; the judge draws from those."""
    for records in (study / "eval").glob("*/*.jsonl"):
        lines = [json.loads(line) for line in records.read_text().splitlines()]
        records.write_text("".join(json.dumps({**r, "mode": "greedy"}) + "\n" for r in lines))
    pools = draw(load_evaluations(study, "judge"), _run())
    assert [x.correct for x in pools["math"]].count(True) == 3 and len(pools["math"]) == 6


def test_verdict_odds_are_those_of_each_prompt_alone(tiny_model_dir):
    """Left-padded batches give each prompt the odds its own unpadded forward gives."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    right, wrong = verdict_tokens(tokenizer, *WORDS)
    prompts = [tokenizer.encode(t) for t in ("Is 2+2=4? ", "Task: 7*8. Answer: 54. Right?", "x")]
    batched = verdict_log_odds(model, tokenizer, prompts, right, wrong, batch_size=8)
    alone = [verdict_log_odds(model, tokenizer, [p], right, wrong, 1)[0] for p in prompts]
    assert batched == pytest.approx(alone, abs=1e-4)
    assert len(set(round(o, 6) for o in alone)) == 3  # the prompts matter


def test_verdict_words_that_share_their_first_token_are_refused(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)  # one token per character
    with pytest.raises(ConfigError, match="start with the same tokens"):
        verdict_tokens(tokenizer, ["correct"], ["cancelled"])
    run = _run()
    run.analyze.judge.scoring = "vibes"
    with pytest.raises(ConfigError, match="unknown 'vibes'; known: probability, reply"):
        from rlvr.analysis.judge import check

        check(run.analyze.judge)
