"""Micro-suite demonstrations score 1.0 through the real verifiers and are right on their own."""

from __future__ import annotations

import contextlib
import io
import random
import re

import pytest

from tasks.micro import demonstration, generate, instruction, levels
from tasks.schema import reference_of
from verifiers import verify


def sample(domain: str, per_level: int, seed: int = 4) -> list[dict]:
    return [
        row
        for level in levels(domain)
        for split in ("train", "heldout")
        for row in generate(domain, per_level, seed, level, split)
    ]


def answer_part(demo: str) -> str:
    return demo.split("</think>\n", 1)[1]


def corrupt(row: dict) -> str:
    """A wrong version of a row's demonstration, so each verifier test can also fail."""
    domain, demo = row["domain"], demonstration(row)
    body = answer_part(demo)
    if domain == "math":
        return demo.replace(body, f"Answer: {int(body.split()[-1]) + 1}")
    if domain == "science":
        letter = body[-1]
        return demo.replace(body, f"Answer: {'B' if letter == 'A' else 'A'}")
    if domain == "code":
        return re.sub(r"(return|print\()(.*?)(\)?\n```)", r"\1(\2)+1\3", demo)
    phrase = row["prompt"][-1]["content"].split("Write: ")[1]  # the input, unconstrained
    return demo.replace(body, phrase + ",")


@pytest.mark.parametrize("split_seed", [0, 1])
def test_math_demonstrations_score_one(split_seed):
    for row in sample("math", 60, split_seed):
        demo = demonstration(row)
        assert verify(demo, reference_of(row), "math").score == 1.0, demo
        assert verify(corrupt(row), reference_of(row), "math").score == 0.0


def test_math_answers_match_an_independent_evaluation():
    for row in sample("math", 60):
        expr = re.fullmatch(r"Compute ([\d+*-]+)\.", row["prompt"][-1]["content"]).group(1)
        assert reference_of(row)["answer"] == str(eval(expr))  # noqa: S307 - digits and + - * only
        steps = re.search(r"<think>(.*)</think>", demonstration(row)).group(1)
        for lhs, rhs in re.findall(r"([\d+*-]+)=(\d+)", steps):  # the scratch work is true
            assert eval(lhs) == int(rhs)  # noqa: S307


def test_science_demonstrations_score_one():
    for row in sample("science", 40):
        demo = demonstration(row)
        assert verify(demo, reference_of(row), "science_mcq").score == 1.0, demo
        assert verify(corrupt(row), reference_of(row), "science_mcq").score == 0.0


def expected_option(question: str) -> str:
    """The right option worked out independently of the generator, from the stated numbers."""
    if m := re.fullmatch(r"(\w+) (\d+) \S+, (\w+) (\d+) \S+\. (\w+)\?", question):
        x, a, y, b, word = m.groups()
        wants_larger = word in {"Heavier", "Longer", "Hotter", "Faster"}
        return x.lower() if (int(a) > int(b)) == wants_larger else y
    if m := re.fullmatch(r"(\d+) (\w+) in (\w+)\?", question):
        factors = {("km", "m"): 1000, ("kg", "g"): 1000, ("L", "mL"): 1000, ("m", "cm"): 100}
        factors |= {("min", "s"): 60, ("h", "min"): 60}
        return str(int(m.group(1)) * factors[(m.group(2), m.group(3))])
    a, b = (int(n) for n in re.findall(r"\d+", question)[:2])
    for end, value in [("Speed (m/s)?", a / b), ("Density (g/cm3)?", a / b)] + [
        ("Distance (m)?", a * b),
        ("Force (N)?", a * b),
    ]:
        if question.endswith(end):
            assert value == int(value)
            return str(int(value))
    raise AssertionError(question)


def test_science_keys_name_the_option_the_numbers_give():
    seen_levels = set()
    for row in sample("science", 40):
        question, listing = row["prompt"][-1]["content"].split("\n")
        options = {key: text for text, key in re.findall(r"(\S+) \(([A-D])\)", listing)}
        ref = reference_of(row)
        assert ref["num_options"] == len(options) and len(set(options.values())) == len(options)
        assert options[ref["answer"]] == expected_option(question), row["prompt"]
        pick = f", {expected_option(question)} ({ref['answer']})"
        assert demonstration(row).split("</think>")[0].endswith(pick)
        seen_levels.add(len(options))
    assert seen_levels == {2, 3, 4}


def test_science_heldout_asks_number_combinations_training_never_shows():
    def questions(split):
        return {r["prompt"][-1]["content"].split("\n")[0] for r in generate("science", 600, 0, None, split)}

    assert not questions("train") & questions("heldout")


def test_code_demonstrations_score_one_in_the_sandbox():
    rows = sample("code", 2, seed=9)[:12]  # the sandbox costs ~20-150 ms a row
    for row in rows:
        demo = demonstration(row)
        assert verify(demo, reference_of(row), "code").score == 1.0, demo
    bad = corrupt(rows[0])
    assert verify(bad, reference_of(rows[0]), "code").score < 1.0


def run_locally(demo: str, ref: dict) -> bool:
    """Execute our own demonstration in-process against the reference cases."""
    source = re.search(r"```python\n(.*)```", demo, re.DOTALL).group(1)
    if ref["style"] == "call":
        namespace: dict = {}
        exec(source, namespace)  # noqa: S102 - code written by the generator, not a model
        return all(namespace["f"](*c["args"]) == c["expected"] for c in ref["cases"])
    for case in ref["cases"]:
        out = io.StringIO()
        lines = iter(case["input"].splitlines())
        with contextlib.redirect_stdout(out):
            exec(source, {"input": lines.__next__})  # noqa: S102
        if out.getvalue() != case["output"]:
            return False
    return True


def test_code_demonstrations_pass_their_cases_locally():
    rows = sample("code", 40)
    for row in rows:
        ref = reference_of(row)
        assert 3 <= len(ref["cases"]) <= 5
        assert run_locally(demonstration(row), ref), demonstration(row)
    assert not run_locally(corrupt(rows[0]), reference_of(rows[0]))


@pytest.mark.parametrize("level", instruction.LEVELS)
def test_every_instruction_problem_scores_one(level):
    """The whole problem space: IFEval's case checkers also need langdetect to say English."""
    for key in instruction._space(level):
        prompt, ref = instruction._render(key, random.Random(0))
        demo = instruction.demonstration(prompt, ref)
        assert ref["prompt"] == prompt
        assert verify(demo, ref, "ifeval").score == 1.0, (prompt, demo)


def test_broken_instruction_demonstrations_fail():
    for row in sample("instruction", 20):
        bad = corrupt(row)
        assert verify(bad, reference_of(row), "ifeval").score < 1.0, bad
