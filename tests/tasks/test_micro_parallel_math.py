"""micro_parallel_math: rows of domain math, fork-join demonstrations that the verifier and
the parallel parser accept, the styles in their shares, and SFT drawing from the task."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks import micro
from tasks.micro import parallel_math
from tasks.schema import reference_of
from verifiers import verify
from verifiers.parallel_format import parse_parallel


def rows(level: int, split: str = "train", n: int = 400) -> list[dict]:
    return micro.generate("parallel_math", n, 3, level, split)


@pytest.mark.parametrize("level", parallel_math.LEVELS)
def test_rows_are_math_named_by_the_task_and_splits_disjoint(level):
    train, held = rows(level), rows(level, "heldout", 100)
    assert {r["domain"] for r in train} == {"math"} and {r["verifier"] for r in train} == {"math"}
    assert all(r["id"].startswith(f"micro-parallel_math-d{level}-") for r in train)
    assert {r["source"] for r in held} == {"micro/parallel_math/heldout"}
    prompts = lambda rs: {r["prompt"][0]["content"] for r in rs}  # noqa: E731
    assert not prompts(train) & prompts(held)
    assert all(r["prompt"][0]["content"].count("(") == level + 1 for r in train)


@pytest.mark.parametrize("level", parallel_math.LEVELS)
def test_demonstrations_are_right_and_parse(level):
    for row in rows(level, n=200):
        demo = micro.demonstration(row)
        assert verify(demo, reference_of(row), "math").is_correct, demo
        trace = parse_parallel(demo)
        assert trace.well_formed, (trace.error, demo)
        wrong = demo.replace(f"Answer: {reference_of(row)['answer']}", "Answer: 99")
        assert not verify(wrong, reference_of(row), "math").is_correct


def test_styles_and_their_accelerations():
    styles = Counter()
    accel: dict[str, set[float]] = {}
    for row in rows(2, n=1000):
        trace = parse_parallel(micro.demonstration(row))
        threads = len(trace.blocks[0].threads) if trace.blocks else 0
        style = {0: "sequential", 2: "paired", 3: "balanced"}[threads]
        styles[style] += 1
        accel.setdefault(style, set()).add(round(trace.lengths().acceleration, 1))
    share = {k: v / 1000 for k, v in styles.items()}
    assert share["sequential"] == pytest.approx(parallel_math.SEQUENTIAL_SHARE, abs=0.04)
    assert share["paired"] == pytest.approx(0.9 * parallel_math.PAIRED_SHARE, abs=0.05)
    assert accel["sequential"] == {1.0}
    assert max(accel["paired"]) < min(accel["balanced"])  # the balanced split is the fastest


def test_level_one_has_two_threads_and_the_layout_of_the_docstring():
    demo = parallel_math.demonstration("Compute (3+4)+(5+2).", {"answer": "14"})
    if "<Parallel>" in demo:
        assert demo == (
            "<think><Parallel><Outlines><Outline>1: 3+4</Outline><Outline>2: 5+2</Outline>"
            "</Outlines><Thread>1: 3+4=7</Thread><Thread>2: 5+2=7</Thread></Parallel>"
            "7+7=14</think>\nAnswer: 14"
        )
    assert parallel_math.reasoning(((3, 4), (5, 2)), "sequential") == "3+4=7, 5+2=7, 7+7=14"


def test_unknown_generator_names_variants():
    with pytest.raises(ValueError, match="parallel_math"):
        micro.generate("parallel", 1, 0)
    with pytest.raises(ValueError, match=r"levels are \(1, 2\)"):
        micro.generate("parallel_math", 1, 0, 3)


def test_sft_demonstrations_come_from_the_domain_micro_tasks():
    from rlvr.config import DomainConfig, RunConfig
    from rlvr.data.rows import sft_examples, sft_generators

    run = RunConfig(domains={"math": DomainConfig(train_tasks=["micro_parallel_math"])})
    run.sft.examples_per_domain = 40
    assert sft_generators(run, "math") == ["parallel_math"]
    examples = sft_examples(run, seed=0)
    assert len(examples) == 40 and {e["domain"] for e in examples} == {"math"}
    assert sum("<Parallel>" in e["completion"][0]["content"] for e in examples) >= 30
    plain = RunConfig(domains={"math": DomainConfig(train_tasks=["gsm8k"])})
    assert sft_generators(plain, "math") == ["math"]  # no micro task: the domain's own


def test_sft_examples_per_domain_can_differ_by_domain():
    from rlvr.config import DomainConfig, RunConfig
    from rlvr.data.rows import sft_examples

    run = RunConfig(domains={d: DomainConfig(train_tasks=[f"micro_{d}"]) for d in ("math", "code")})
    run.sft.examples_per_domain = 30
    run.sft.domain_examples = {"code": 12}
    counts = Counter(e["domain"] for e in sft_examples(run, seed=0))
    assert counts == {"math": 30, "code": 12}
