"""The fidelity table: every recipe row covered, every deviation explained, drift caught."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rlvr.config import ConfigError
from rlvr.study.__main__ import plan
from rlvr.study.commands import stage_config, user_overrides
from rlvr.study.fidelity import (
    DEVIATION,
    MATCH,
    NO_REASON,
    NOT_COVERED,
    RecipeRow,
    load_recipe,
    problems,
    same,
    study_configs,
    study_fidelity,
    table,
    to_markdown,
)
from tests._requirements import needs_shared_data

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "recipe.md"
BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"
m2rl_data = needs_shared_data("m2rl_paper")


def _plan(tmp: Path, *extra: str):
    argv = ["experiment=m2rl_study", f"study.out_dir={tmp}", *extra]
    p = plan(argv)
    configs = {s.name: stage_config(user_overrides(argv), s) for s in p.stages}
    return p, study_configs(p.run, p.stages, configs)


@pytest.fixture(scope="module")
def m2rl(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("m2rl_study"))


def _by_key(rows):
    return {f"{r.stage}.{r.setting}": r for r in rows}


@m2rl_data
def test_the_m2rl_study_covers_every_recipe_row_and_explains_every_deviation(m2rl):
    p, _ = m2rl
    recipe = load_recipe(Path(p.run.paths.data_dir) / p.run.study.recipe)
    assert p.fidelity is not None and not p.fidelity.message
    assert [(r.stage, r.setting) for r in p.fidelity.rows] == [(r.stage, r.setting) for r in recipe]
    assert p.fidelity.problems == ()
    rows = _by_key(p.fidelity.rows)
    for key in (
        "rl.steps_expert",
        "rl.steps_mixed",
        "rl.max_response_length",
        "rl.off_policy_correction",
        "rl.adam_betas",
        "mt_opd.adam_betas",
        "mt_opd.weight_decay",
        "sft.lr_schedule",
        "sft.adam_betas",
        "sft.global_batch",
    ):
        assert rows[key].status == MATCH, rows[key]
    assert all(r.reason for r in p.fidelity.rows if r.status == DEVIATION)


@m2rl_data
def test_a_recipe_row_the_table_does_not_cover_is_a_problem(m2rl):
    p, configs = m2rl
    recipe = load_recipe(Path(p.run.paths.data_dir) / p.run.study.recipe)
    extra = [*recipe, RecipeRow("rl", "reward_shaping", "none")]
    rows = table(extra, configs, p.run.study.deviations)
    assert rows[-1].status == NOT_COVERED
    found = problems(rows, extra, p.run.study.deviations)
    assert len(found) == 1 and "rl.reward_shaping" in found[0]


@m2rl_data
def test_a_deviation_without_its_reason_is_a_problem(m2rl):
    p, configs = m2rl
    recipe = load_recipe(Path(p.run.paths.data_dir) / p.run.study.recipe)
    deviations = {k: v for k, v in p.run.study.deviations.items() if k != "merge.ties_keep"}
    rows = _by_key(table(recipe, configs, deviations))
    assert rows["merge.ties_keep"].status == NO_REASON
    found = problems(list(rows.values()), recipe, deviations)
    assert len(found) == 1 and found[0].startswith("merge.ties_keep")
    typo = {**p.run.study.deviations, "rl.no_such_setting": "why"}
    assert any("rl.no_such_setting" in x for x in problems(list(rows.values()), recipe, typo))


@m2rl_data
def test_a_changed_setting_shows_up_as_a_deviation(tmp_path):
    p, _ = _plan(tmp_path, "algo.learning_rate=1e-5", "distill.adam_beta2=0.999")
    rows = _by_key(p.fidelity.rows)
    assert (rows["rl.learning_rate"].ours, rows["rl.learning_rate"].status) == (
        "1e-5 constant",
        NO_REASON,
    )
    assert rows["mt_opd.adam_betas"].status == NO_REASON
    assert any(x.startswith("rl.learning_rate") for x in p.fidelity.problems)
    # an arm that differs is named, beside the others
    p, _ = _plan(tmp_path, 'study.arm_overrides.math=["algo.max_completion_length=16384"]')
    ours = _by_key(p.fidelity.rows)["rl.max_response_length"].ours
    assert "expert-math-seed0: 16384" in ours and "mixed-seed0: 32768" in ours


def test_a_missing_recipe_file_is_a_message_not_a_crash(m2rl, tmp_path):
    p, _ = m2rl
    run = dataclasses.replace(p.run, paths=dataclasses.replace(p.run.paths, data_dir=str(tmp_path)))
    fidelity = study_fidelity(run, p.stages, {})
    assert fidelity is not None and not fidelity.rows
    assert "no recipe file" in fidelity.message and "RLVR_SHARED_DATA" in fidelity.message


@pytest.mark.parametrize(
    ("ours", "paper", "equal"),
    [
        ("1", "1.0", True),
        ("2e-6 constant", "2.0e-06 Constant", True),
        ("clip C=2", "clip C=2.0", True),
        ("0.9/0.95", "0.9/0.98", False),
        ("16384", "32768", False),
        ("2048 (one step)", "2048", False),
    ],
)
def test_values_compare_word_by_word_and_numbers_as_numbers(ours, paper, equal):
    assert same(ours, paper) is equal


@m2rl_data
def test_the_recipe_page_shows_the_table_the_code_produces(m2rl):
    p, _ = m2rl
    text = DOC.read_text()
    block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert block == to_markdown(p.fidelity.rows), "run: python scripts/recipe_table.py --write"


def test_grpo_config_takes_the_importance_sampling_mode_and_cap(tmp_path):
    from rlvr.training.trainer_args import build_grpo_config

    argv = [
        "experiment=tiny_rl",
        "algo.vllm_importance_sampling_mode=token_truncate",
        "algo.vllm_importance_sampling_clip_max=2.0",
        "run_name=t",
    ]
    run = stage_run(argv)
    args = build_grpo_config(run, tmp_path)
    assert (args.vllm_importance_sampling_mode, args.vllm_importance_sampling_clip_max) == (
        "token_truncate",
        2.0,
    )
    with pytest.raises(ConfigError, match="token_truncate, token_mask"):
        stage_run(["experiment=tiny_rl", "algo.vllm_importance_sampling_mode=token", "run_name=t"])


def stage_run(argv: list[str]):
    from omegaconf import OmegaConf

    from rlvr.config import validate
    from rlvr.study.commands import compose

    run = OmegaConf.to_object(compose(argv))
    validate(run, check_paths=False)
    return run


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["sft.lr_scheduler_type=cosine_with_min_lr"], "needs one"),
        (["sft.min_learning_rate=1e-6"], "cosine_with_min_lr"),
        (["sft.warmup_ratio=0.1", "sft.warmup_steps=20"], "set one"),
        (["sft.warmup_ratio=1.5", "sft.warmup_steps=0"], r"\[0, 1\)"),
    ],
)
def test_a_sft_schedule_that_cannot_work_fails_naming_the_fix(overrides, message):
    with pytest.raises(ConfigError, match=message):
        stage_run(["experiment=tiny_sft", *overrides, "run_name=t"])


def test_the_sft_schedule_warms_up_a_tenth_then_decays_to_its_floor(tmp_path):
    """What run_sft hands TRL (warmup_steps below 1 and lr_scheduler_kwargs) is transformers'
    warmup fraction and cosine floor: 5e-5 after 10% of the steps, 5e-6 at the end."""
    import torch
    from transformers import get_scheduler
    from trl import SFTConfig

    from rlvr.training.sft import _scheduler_kwargs

    run = stage_run(["experiment=m2rl_study", "run_name=t"])
    s = run.sft
    args = SFTConfig(
        output_dir=str(tmp_path),
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.lr_scheduler_type,
        lr_scheduler_kwargs=_scheduler_kwargs(run),
        warmup_steps=s.warmup_ratio or s.warmup_steps,
        use_cpu=True,
    )
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=s.learning_rate)
    steps = 100
    scheduler = get_scheduler(
        args.lr_scheduler_type,
        optimizer,
        args.get_warmup_steps(steps),
        steps,
        scheduler_specific_kwargs=args.lr_scheduler_kwargs,
    )
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    assert lrs[10] == pytest.approx(5e-5) and max(lrs) == pytest.approx(5e-5)
    assert scheduler.get_last_lr()[0] == pytest.approx(5e-6)
