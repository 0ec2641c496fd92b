"""The study's plan: stages, dependencies, commands, config hashes and bad input at plan time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from rlvr.config import ConfigError
from rlvr.study.__main__ import load_study, plan, run_study
from rlvr.study.commands import _hashed_part, compose, hash_plan, stage_config, user_overrides
from rlvr.study.manifest import (
    adopt_earlier_hashes,
    mark_started,
    read_json,
    reconcile,
    recorded_root,
    write_json,
)
from rlvr.study.plan import DOMAINS, quote, register_optional_stage, study_root

MERGES = ("average", "task_arithmetic", "ties", "ties_dare", "ta_dare", "sce", "ram", "ramplus_tl")


# The plan's shape under test: one seed, and conf/study/embedded.yaml's optional stages
# (tiny_study itself runs two seeds, the neighbourhood and the analyses).
SHAPE = ("study.seeds=[0]", "study.stages=[neighbourhood,analyze]")


@pytest.fixture(scope="module")
def plan_root(tmp_path_factory):
    """One study folder for the tests that only plan: their command lines then repeat, and a
    process composes each distinct one once (``rlvr.study.commands``), so a plan after the
    first costs about a second instead of twenty."""
    return tmp_path_factory.mktemp("plans")


def _plan(tmp_path, *extra: str):
    """(run, stages, hashes, commands) of the reduced tiny study."""
    planned = plan(["experiment=tiny_study", *SHAPE, f"study.out_dir={tmp_path}", *extra])
    return planned.run, planned.stages, planned.hashes, planned.commands


def test_tiny_study_expands_to_every_stage_with_its_dependencies(plan_root):
    run, stages, hashes, commands = _plan(plan_root)
    names = [s.name for s in stages]
    experts = [f"expert-{d}-seed0" for d in DOMAINS]
    merges = [f"merge-{m}-seed0" for m in MERGES]
    models = ["base", "sft", *(f"{d}-seed0" for d in DOMAINS), "mixed-seed0"]
    models += [f"{m}-seed0" for m in MERGES]
    pairs = [f"{a}+{b}-seed0" for i, a in enumerate(DOMAINS) for b in DOMAINS[i + 1 :]]
    assert names == [
        "sft",
        *experts,
        "mixed-seed0",
        *merges,
        # conf/study/embedded.yaml's optional stages: the pairs' merges and evaluations, then
        # the analyses, which wait for every evaluation
        *(stage for p in pairs for stage in (f"merge-{p}", f"eval-{p}")),
        *(f"eval-{m}" for m in models),
        "analyze",
        "report",
    ]
    by_name = {s.name: s for s in stages}
    for name in [*experts, "mixed-seed0"]:
        assert by_name[name].deps == ("sft",)
    for name in merges:
        assert set(by_name[name].deps) == set(experts)
    assert by_name["eval-base"].deps == ()
    assert by_name["eval-ties-seed0"].deps == ("merge-ties-seed0",)
    pair_stages = {f"{kind}-{p}" for p in pairs for kind in ("merge", "eval")}
    assert set(by_name["report"].deps) == {f"eval-{m}" for m in models} | {"analyze"} | pair_stages
    evals = {f"eval-{m}" for m in [*models, *pairs]}
    assert set(by_name["analyze"].deps) == {"sft", *experts, "mixed-seed0", *merges, *evals}
    pair = by_name["merge-math+code-seed0"]
    assert set(pair.deps) == {"expert-math-seed0", "expert-code-seed0"}
    assert "merge=task_arithmetic" in pair.overrides  # analyze.neighbourhood.preset
    assert pair.out_dir == plan_root / "neighbourhood" / "merges" / "math+code-seed0"
    scored = by_name["eval-math+code-seed0"]
    assert scored.out_dir == plan_root / "neighbourhood" / "eval" / "math+code-seed0"
    assert {p.name for p in scored.outputs} == {"micro_math.json", "micro_code.json"}
    assert len(set(hashes.values())) == len(stages)  # every stage its own config
    # inside a study the training stages skip their own held-out evaluations
    for name in ["sft", *experts, "mixed-seed0"]:
        assert "eval.in_run=false" in commands[name]
        assert "resume=true" in commands[name] or name == "sft"


def test_seeds_multiply_trained_models_and_merges_only(plan_root):
    _, stages, _, _ = _plan(plan_root, "study.seeds=[0,1]", "study.merges=[ties]")
    names = [s.name for s in stages]
    assert names.count("sft") == 1 and "eval-base" in names and "eval-sft" in names
    for seed in (0, 1):
        assert f"mixed-seed{seed}" in names and f"merge-ties-seed{seed}" in names
        merge = next(s for s in stages if s.name == f"merge-ties-seed{seed}")
        assert set(merge.deps) == {f"expert-{d}-seed{seed}" for d in DOMAINS}
        assert f"merge.seed={seed}" in merge.overrides
    # per seed: 5 experts, mixed, merge, their evaluations, 10 pair merges and evaluations
    assert len(stages) == 1 + 2 * (5 + 1 + 1) + 1 + 2 + 2 * 7 + 1 + 2 * 20


def test_stage_commands_parse_back_to_the_planned_paths(tmp_path):
    """Paths with '=', ',', quotes and spaces reach each stage exactly (no hand quoting)."""
    odd = tmp_path / "a b=1,c'd\"e"
    run, stages, _, commands = _plan(tmp_path, f"study.out_dir={quote(str(odd))}")
    expert = next(s for s in stages if s.name == "expert-math-seed0")
    cfg = compose(commands[expert.name][3:])
    assert cfg.init_from == str(odd / "sft" / "final")
    assert cfg.trainer.seed == 0 and list(cfg.domains) == ["math"]
    merge = next(s for s in stages if s.name == "merge-ties-seed0")
    cfg = compose(commands[merge.name][3:])
    assert list(cfg.merge.models) == [str(odd / "experts" / f"{d}-seed0" / "final") for d in DOMAINS]
    assert cfg.merge.base == str(odd / "sft" / "final") and cfg.merge.method == "ties"


def test_a_changed_setting_invalidates_the_stages_that_use_it_and_their_dependents(plan_root):
    _, stages, before, _ = _plan(plan_root)
    _, _, after, _ = _plan(plan_root, "algo.learning_rate=5e-5")
    changed = {n for n in before if before[n] != after[n]}
    assert "sft" not in changed and "eval-base" not in changed  # GRPO settings do not touch them
    assert "eval-sft" not in changed
    for s in stages:
        if s.kind in ("expert", "mixed", "merge", "report") or s.name.endswith("seed0"):
            assert s.name in changed, s.name
    _, _, sft_changed, _ = _plan(plan_root, "sft.max_steps=7")
    assert {n for n in before if before[n] != sft_changed[n]} == set(before) - {"eval-base"}


def test_study_settings_that_do_not_change_results_keep_the_hashes(plan_root):
    _, _, a, _ = _plan(plan_root, "study.jobs=1")
    _, _, b, _ = _plan(plan_root, "study.jobs=2", "study.poll_s=3")
    assert a == b


@pytest.mark.parametrize(
    "override, names",
    [
        ("study.domains=[math,chemistry]", ["chemistry", "math", "code", "agent"]),
        ("study.merges=[ties,frankenmerge]", ["frankenmerge", "ties", "task_arithmetic"]),
        ("study.benchmarks=[micro_math,gsm9k]", ["gsm9k", "gsm8k", "micro_math"]),
        ("study.stages=[distill]", ["distill"]),
        ("study.seeds=[0,0]", ["distinct"]),
    ],
)
def test_unknown_names_fail_at_plan_time_with_the_valid_ones(plan_root, override, names):
    with pytest.raises(ConfigError) as err:
        _plan(plan_root, override)
    for name in names:
        assert name in str(err.value)


def test_arm_overrides_reach_only_their_arms_training_stages(plan_root):
    _, stages, before, commands = _plan(plan_root)
    _, _, after, commands_after = _plan(
        plan_root,
        'study.arm_overrides.agent=["algo.max_completion_length=200"]',
        'study.arm_overrides.mixed=["trainer.max_steps=9"]',
    )
    for stage in stages:
        agent_only = "algo.max_completion_length=200" in commands_after[stage.name]
        mixed_only = "trainer.max_steps=9" in commands_after[stage.name]
        assert agent_only == stage.name.startswith("expert-agent-"), stage.name
        assert mixed_only == stage.name.startswith("mixed-"), stage.name
    changed = {n for n in before if before[n] != after[n]}
    assert "expert-agent-seed0" in changed and "mixed-seed0" in changed
    assert "expert-math-seed0" not in changed and "sft" not in changed
    assert "eval-math-seed0" not in changed and "eval-agent-seed0" in changed


def test_progress_counts_the_steps_an_arm_override_sets(plan_root):
    _, stages, _, _ = _plan(plan_root, 'study.arm_overrides.mixed=["trainer.max_steps=9"]')
    steps = {s.name: s.total_steps for s in stages if s.kind in ("expert", "mixed")}
    assert steps["mixed-seed0"] == 9 and steps["expert-math-seed0"] == 40


@pytest.mark.parametrize(
    "override, message",
    [
        ('+study.arm_overrides.chemistry=["trainer.max_steps=9"]', "chemistry"),
        ('study.arm_overrides.math=["trainer.max_steps"]', "key=value"),
    ],
)
def test_arm_overrides_name_a_known_arm_and_hold_overrides(plan_root, override, message):
    with pytest.raises(ConfigError, match=message):
        _plan(plan_root, override)


def test_overrides_for_arms_outside_the_study_are_unused_with_a_warning(plan_root, caplog):
    _, stages, _, commands = _plan(plan_root, "study.mixed=false", 'study.arm_overrides.mixed=["trainer.max_steps=9"]')
    assert not any("trainer.max_steps=9" in commands[s.name] for s in stages)
    assert "['mixed'] unused" in caplog.text
    _, stages, _, _ = _plan(plan_root, "study.domains=[math,code]", "study.merges=[]")
    assert {s.name for s in stages if s.kind == "expert"} == {
        "expert-math-seed0",
        "expert-code-seed0",
    }


def test_a_narrowed_study_keeps_only_its_own_domains_mixture_weights(plan_root):
    """Mixed-arm weights for all five domains; with study.domains=[math,code] its command
    keeps the math and code weights and the plan composes (the others would fail)."""
    weights = ",".join(['"mixture.mode=weighted"', *(f'"domains.{d}.weight=0.2"' for d in DOMAINS)])
    _, stages, _, commands = _plan(
        plan_root,
        "study.domains=[math,code]",
        "study.merges=[]",
        f'study.arm_overrides.mixed=["trainer.max_steps=100",{weights}]',
    )
    mixed = " ".join(commands["mixed-seed0"])
    assert "domains.math.weight=0.2" in mixed and "domains.code.weight=0.2" in mixed
    assert "domains.science.weight" not in mixed and "domains.agent.weight" not in mixed
    assert "mixture.mode=weighted" in mixed and "trainer.max_steps=100" in mixed


def test_merges_need_two_experts(plan_root):
    with pytest.raises(ConfigError, match="at least two"):
        _plan(plan_root, "study.domains=[math]")
    _, stages, _, _ = _plan(plan_root, "study.domains=[math]", "study.merges=[]")
    assert [s.name for s in stages if s.kind == "merge"] == []


def test_benchmarks_follow_the_study_domains(plan_root):
    _, stages, _, _ = _plan(plan_root, "study.domains=[math,code]")
    report = stages[-1]
    assert report.name == "report"
    evals = [s for s in stages if s.kind == "eval"]
    assert {p.name for p in evals[0].outputs} == {"micro_math.json", "micro_code.json"}


def test_optional_stages_plug_in_by_name(plan_root):
    from rlvr.study.plan import OPTIONAL_STAGES, ModelRef, Stage

    def distill(ctx):
        out = ctx.root / "distill"
        deps = tuple(e.stage for e in ctx.experts.values())
        stage = Stage("distill-seed0", "distill", "rlvr.train", ("trainer.max_steps=1",), deps, out, ())
        return [stage], [ModelRef("mtopd-seed0", str(out / "final"), "distill-seed0")]

    register_optional_stage("test_distill", distill)
    try:
        _, stages, _, _ = _plan(plan_root, "study.stages=[test_distill]", "study.merges=[ties]")
    finally:
        OPTIONAL_STAGES.pop("test_distill")
    by_name = {s.name: s for s in stages}
    assert set(by_name["distill-seed0"].deps) == {f"expert-{d}-seed0" for d in DOMAINS}
    assert by_name["eval-mtopd-seed0"].deps == ("distill-seed0",)
    assert "eval-mtopd-seed0" in by_name["report"].deps


def test_an_existing_sft_model_replaces_the_sft_stage(plan_root, tiny_model_dir):
    _, stages, _, commands = _plan(plan_root, f"study.sft_model={tiny_model_dir}", "study.merges=[]")
    assert "sft" not in [s.name for s in stages]
    assert all(s.deps == () for s in stages if s.kind == "expert")
    assert f'init_from="{tiny_model_dir}"' in commands["expert-math-seed0"]


def test_training_stages_run_under_accelerate_when_the_study_names_a_config(plan_root):
    _, stages, _, commands = _plan(plan_root, "study.accelerate=cpu_fsdp2")
    assert commands["expert-math-seed0"][1:4] == [
        "-m",
        "accelerate.commands.launch",
        "--config_file",
    ]
    assert commands["expert-math-seed0"][4].endswith("conf/accelerate/cpu_fsdp2.yaml")
    assert commands["merge-ties-seed0"][1:3] == ["-m", "rlvr.merge"]
    with pytest.raises(ConfigError, match="no conf/accelerate/nope.yaml"):
        _plan(plan_root, "study.accelerate=nope")


def test_m2rl_study_composes_for_gpu_clusters(tmp_path):
    p = plan(["experiment=m2rl_study", f"study.out_dir={tmp_path}"])
    run, stages, commands = p.run, p.stages, p.commands
    assert run.model.name == "Qwen/Qwen3-4B-Base" and run.study.launcher == "slurm"
    assert run.algo.num_generations == 16 and run.algo.learning_rate == 2e-6
    expert = commands["expert-code-seed0"]
    assert "accelerate.commands.launch" in expert and "domains=[m2rl/code]" in expert
    assert "eval.backend" not in " ".join(expert)
    cfg = OmegaConf.to_container(compose(commands["eval-sft"][3:]))
    assert cfg["eval"]["backend"] == "vllm" and "aime24" in cfg["eval"]["tasks"]
    merges = [s.name for s in stages if s.kind == "merge"]
    paper = ("average", "task_arithmetic", "ties", "ties_dare", "ta_dare", "sce")
    assert merges == [f"merge-{m}-seed0" for m in paper]
    # the paper's arms only: MT-OPD, no cascade, no adaptive mixture
    names = [s.name for s in stages]
    assert "mt_opd-seed0" in names
    assert not [n for n in names if n.startswith(("cascade", "adaptive", "eval-cascade"))]


def test_the_m2rl_dry_run_plans_the_papers_steps(tmp_path):
    """200 steps per expert, 400 mixed, MT-OPD 200 at 256 x 4: six GRPO runs and one MT-OPD,
    in the stage configs and the progress counts (step k/total) the dry run plans."""
    argv = ["experiment=m2rl_study", f"study.out_dir={tmp_path}"]
    p = plan(argv)
    trained = ("expert", "mixed", "distill", "cascade", "adaptive")  # all but the SFT
    training = {s.name: s.total_steps for s in p.stages if s.kind in trained}
    expected = {f"expert-{d}-seed0": 200 for d in DOMAINS}
    assert training == {**expected, "mixed-seed0": 400, "mt_opd-seed0": 200}
    opd = next(s for s in p.stages if s.kind == "distill")
    d = stage_config(user_overrides(argv), opd).distill
    assert (d.prompts_per_step, d.samples_per_prompt, d.max_steps) == (256, 4, 200)
    assert "trainer.max_steps=400" in p.commands["mixed-seed0"]
    assert "trainer.max_steps=400" not in p.commands["expert-math-seed0"]


def test_the_m2rl_arms_preset_reuses_every_stage_of_the_study(tmp_path):
    outputs = f"paths.output_root={tmp_path}"
    arms = plan(["experiment=m2rl_study_arms", outputs])
    plain = plan(["experiment=m2rl_study", outputs])
    assert study_root(arms.run) == study_root(plain.run) == (tmp_path / "m2rl_study").resolve()
    names = {s.name for s in arms.stages}
    assert {"merge-ram-seed0", "merge-ramplus_tl-seed0", "adaptive-seed0"} <= names
    cascade = [s.name for s in arms.stages if s.kind == "cascade"]
    order = ("instruction", "math", "science", "code", "agent")
    assert cascade == [f"cascade-{k}-{d}-seed0" for k, d in enumerate(order, 1)]
    assert "domains=[m2rl/code]" in arms.commands["cascade-4-code-seed0"]
    adaptive = next(s for s in arms.stages if s.name == "adaptive-seed0")
    assert adaptive.total_steps == 400  # the mixed arm's steps
    shared = set(plain.hashes) - {"report"}
    assert shared < names
    assert all(arms.hashes[n] == plain.hashes[n] for n in shared)


def test_the_arms_preset_adds_its_arms_to_the_tiny_study_folder(tmp_path):
    outputs = f"paths.output_root={tmp_path}"
    run, stages, hashes, *_ = plan(["experiment=tiny_study_arms", outputs])
    plain, _, plain_hashes, *_ = plan(["experiment=tiny_study", outputs])
    assert study_root(run) == study_root(plain) == (tmp_path / "tiny_study").resolve()
    names = {s.name for s in stages}
    assert {"cascade-5-agent-seed1", "adaptive-seed1", "eval-cascade-seed0"} <= names
    # everything make study runs is reused as it is
    shared = set(plain_hashes) - {"analyze", "report"}
    assert shared < names
    assert all(hashes[n] == plain_hashes[n] for n in shared)


def test_a_moved_study_folder_keeps_every_stage_and_an_earlier_folder_is_adopted(tmp_path):
    """Paths inside the folder enter the hashes relative to it: copying a finished study to
    another disk reruns nothing. A folder whose markers hold the earlier, absolute-path hashes
    (from its old place, named in its study.json) is adopted: every stage reused."""
    old, new = tmp_path / "scratch" / "tiny_study", tmp_path / "home" / "tiny_study"
    at_old, at_new = (plan([*SMALL, f"study.out_dir={root}"]) for root in (old, new))
    assert at_old.hashes == at_new.hashes
    assert any(str(old) in " ".join(c) for c in at_old.commands.values())  # paths do differ
    # a folder finished at ``old`` under the earlier hashing, then moved to ``new``
    absolute = hash_plan(at_old.stages, _configs(at_old), old, str(old))
    assert absolute["expert-math-seed0"] != at_old.hashes["expert-math-seed0"]
    for stage in at_new.stages:
        for out in stage.outputs:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("x")
        write_json(new / ".stages" / f"{stage.name}.done.json", {"hash": absolute[stage.name]})
    entries = {
        s.name: {"config_hash": absolute[s.name], "log": str(old / "logs" / f"{s.name}.log")} for s in at_old.stages
    }
    write_json(new / "study.json", {"plan": {}, "stages": entries})
    assert recorded_root(new) == old
    before = reconcile(new, at_new.stages, at_new.hashes, force=False)
    assert "expert-math-seed0" in before.stale  # what happened before the earlier hashes
    earlier = plan([*SMALL, f"study.out_dir={new}"]).earlier
    adopted = adopt_earlier_hashes(new, at_new.stages, at_new.hashes, earlier)
    assert set(adopted) >= {"expert-math-seed0", "eval-mixed-seed0", "eval-ties-seed0", "report"}
    after = reconcile(new, at_new.stages, at_new.hashes, force=False)
    assert set(after.reuse) == {s.name for s in at_new.stages} and not after.stale
    assert read_json(new / "study.json")["stages"]["sft"]["config_hash"] == at_new.hashes["sft"]


SMALL = (
    "experiment=tiny_study",
    "study.seeds=[0]",
    "study.merges=[ties]",
    "study.stages=[]",
    "study.domains=[math,code]",
)


def test_only_paths_inside_the_study_folder_enter_the_hash_relative_to_it():
    from rlvr.study.commands import _rooted

    settings = [
        'init_from="/x/study/sft/final"',
        'eval.out_dir="/x/study"',
        "/x/study2/sft",
        'eval.models=["m=/x/study/e"]',
        "/x/studying",
    ]
    assert _rooted(settings, "/x/study", "<study>") == [
        'init_from="<study>/sft/final"',
        'eval.out_dir="<study>"',
        "/x/study2/sft",
        'eval.models=["m=<study>/e"]',
        "/x/studying",
    ]


def test_a_dry_run_on_a_finished_folder_says_what_reruns_and_why(tmp_path, capsys):
    root = tmp_path / "study"
    planned = plan([*SMALL, f"study.out_dir={root}"])
    for stage in planned.stages:  # every stage finished, as a run records it
        for out in stage.outputs:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("x")
        mark_started(root, stage, planned.hashes[stage.name], planned.settings[stage.name])
        write_json(root / ".stages" / f"{stage.name}.done.json", {"hash": planned.hashes[stage.name]})
    markers = {p.name: p.read_text() for p in (root / ".stages").iterdir()}
    argv = [*SMALL, f"study.out_dir={root}", "study.dry_run=true", "algo.learning_rate=1e-3"]
    assert run_study(argv) == 0
    out = capsys.readouterr().out
    experts = [s.name for s in planned.stages if s.kind in ("expert", "mixed")]
    assert f"in {root}: " in out and f"{len(experts) + 6} rerun" in out  # + merge, 4 evals, report
    assert "rerun expert-math-seed0: its config changed (algo.learning_rate: 0.0002 -> 0.001)" in out
    assert "rerun merge-ties-seed0: dependency expert-math-seed0, expert-code-seed0 changed" in out
    assert "rerun sft" not in out and "rerun eval-sft" not in out
    assert {p.name: p.read_text() for p in (root / ".stages").iterdir()} == markers  # untouched


def _configs(planned):
    base = user_overrides([*SMALL, f"study.out_dir={study_root(planned.run)}"])
    return {s.name: stage_config(base, s) for s in planned.stages}


def test_dry_run_prints_every_stage_with_command_and_dependencies(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.study",
            "experiment=tiny_study",
            *SHAPE,
            "study.dry_run=true",
            f"study.out_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    _, stages, _, _ = _plan(tmp_path)
    assert out.splitlines()[0] == f"{len(stages)} stages"
    for s in stages:
        line = next(x for x in out.splitlines() if x.startswith(s.name + " "))
        assert line.split("after ")[1] == (",".join(s.deps) or "-")
    assert out.count("-m rlvr.train") == 6 and out.count("-m rlvr.merge") == len(MERGES) + 10  # + the pairs
    assert not (tmp_path / "study.json").exists()  # a dry run touches nothing


@pytest.mark.parametrize(
    "override, said",
    [
        ("sft.domain_examples.math=10", "+sft.domain_examples.math=10"),  # a new key needs "+"
        ("trainer.max_steps=many", "trainer.max_steps"),
    ],
)
def test_an_override_that_does_not_compose_is_a_config_error_not_a_traceback(tmp_path, override, said):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.study",
            "experiment=tiny_study",
            "study.dry_run=true",
            f"study.out_dir={tmp_path}",
            override,
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "config error" in result.stderr and said in result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_shows_the_grpo_arms_waiting_for_the_filter_and_reading_its_rows(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.study",
            "experiment=tiny_study",
            "study.dry_run=true",
            f"study.out_dir={tmp_path}",
            "study.stages=[filter]",
            "study.domains=[math,code]",
            "study.merges=[]",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    names = [line.split()[0] for line in out[1::2]]
    assert names.index("sft") < names.index("filter") < names.index("expert-math-seed0")
    for arm in ("expert-math-seed0", "expert-code-seed0", "mixed-seed0"):
        i = names.index(arm)
        assert out[1 + 2 * i].split("after ")[1] == "sft,filter"
        command = out[2 + 2 * i]
        for d in ("math", "code") if arm.startswith("mixed") else (arm.split("-")[1],):
            assert f"'domains.{d}.train_tasks=[rows_{d}]'" in command
            assert f"'domains.{d}.data_files=[\"{tmp_path}/filter/{d}.jsonl\"]'" in command
    assert "rows_" not in out[2 + 2 * names.index("eval-sft")]  # evaluation: the benchmarks


def test_bad_input_exits_with_the_fix_before_anything_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.study",
            "experiment=tiny_study",
            "study.merges=[tie]",
            f"study.out_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "unknown merge method 'tie'" in result.stderr and "ties" in result.stderr
    assert not (tmp_path / "study.json").exists()


def test_a_study_must_be_named():
    with pytest.raises(ConfigError, match="experiment=tiny_study"):
        load_study(["study.dry_run=true"])


def test_load_study_rejects_unknown_group_options():
    with pytest.raises(ConfigError, match="valid study"):
        load_study(["experiment=tiny_study", "study=huge"])


def test_training_stages_are_sized_by_the_tokens_their_own_config_samples(plan_root):
    """The scheduler starts the largest ready stage first: the mixed arm (200 steps) and the
    agent expert (80 steps of 192-token episodes) outrank the other experts; evaluations size 0."""
    _, stages, _, _ = _plan(plan_root)
    work = {s.name: s.work for s in stages}
    assert work["mixed-seed0"] == 200 * 32 * 8 * 192
    assert work["expert-agent-seed0"] == 80 * 32 * 8 * 192
    assert work["expert-math-seed0"] == 40 * 32 * 8 * 64
    assert work["mixed-seed0"] > work["expert-agent-seed0"] > work["expert-code-seed0"]
    assert work["sft"] == 0 and work["eval-sft"] == 0


def test_the_manifest_records_what_the_numbers_ran_on():
    import torch
    import transformers

    from rlvr.study.environment import environment

    env = environment()
    assert env["packages"]["torch"] == torch.__version__.split("+")[0] or (
        torch.__version__.startswith(env["packages"]["torch"])
    )
    assert env["packages"]["transformers"] == transformers.__version__
    assert env["cpus"] == os.cpu_count()


def _sft_scores(root, scores: dict[str, tuple[float, float]]) -> None:
    """``<root>/eval/sft/micro_<d>.json`` with the given (Avg@k, pass@k) per domain."""
    import json

    folder = root / "eval" / "sft"
    folder.mkdir(parents=True)
    for domain, (avg, pass_k) in scores.items():
        summary = {"domain": domain, "avg_at_k": avg, "pass_at_k": pass_k}
        (folder / f"micro_{domain}.json").write_text(json.dumps(summary))


def test_the_cascade_chains_one_stage_per_domain_and_evaluates_each(plan_root):
    order = "study.cascade_order=[code,math,science,instruction,agent]"
    _, stages, hashes, commands = _plan(plan_root, "study.stages=[cascade]", order)
    by_name = {s.name: s for s in stages}
    chain = [
        "cascade-1-code-seed0",
        "cascade-2-math-seed0",
        "cascade-3-science-seed0",
        "cascade-4-instruction-seed0",
        "cascade-5-agent-seed0",
    ]
    assert [s.name for s in stages if s.kind == "cascade"] == chain
    assert by_name[chain[0]].deps == ("sft",)
    for before, after in zip(chain, chain[1:], strict=False):
        assert by_name[after].deps == (before,)
        start = f"init_from={quote(str(by_name[before].out_dir / 'final'))}"
        assert start in by_name[after].overrides
    # each stage trains its domain with that domain's expert settings
    assert "domains=[agent]" in by_name[chain[-1]].overrides
    assert "trainer.max_steps=80" in by_name[chain[-1]].overrides  # tiny_study's agent arm
    evals = {s.name for s in stages if s.kind == "eval"}
    assert {"eval-cascade@1-code-seed0", "eval-cascade@4-instruction-seed0"} <= evals
    assert "eval-cascade-seed0" in evals and "eval-cascade@5-agent-seed0" not in evals
    assert "eval-cascade-seed0" in by_name["report"].deps


def test_the_cascade_puts_the_least_room_first_and_keeps_the_order_it_ran(tmp_path):
    from rlvr.study.arms import cascade_order, record_cascade_order

    _sft_scores(
        tmp_path, {"math": (90, 95), "code": (40, 80), "science": (50, 60), "instruction": (30, 90), "agent": (10, 12)}
    )
    run = load_study(["experiment=tiny_study", "study.stages=[cascade]", f"study.out_dir={tmp_path}"])
    order, source = cascade_order(run, tmp_path)
    assert order == ["agent", "math", "science", "code", "instruction"]
    assert "least room" in source
    record_cascade_order(run, tmp_path)
    (tmp_path / "eval" / "sft" / "micro_agent.json").unlink()  # the scores change later ...
    assert cascade_order(run, tmp_path)[0] == order  # ... the recorded order stays
    # without the study's own evaluation, rlvr.calibrate's scores order it
    fresh = tmp_path / "fresh"
    _sft_scores(fresh / "calibration", {"math": (10, 90), "code": (40, 45)})
    run = load_study(
        ["experiment=tiny_study", "study.domains=[math,code]", "study.stages=[cascade]", f"study.out_dir={fresh}"]
    )
    order, source = cascade_order(run, fresh)
    assert order == ["code", "math"] and "calibration" in source


def test_a_cascade_order_must_name_every_domain_once(tmp_path):
    with pytest.raises(ConfigError, match="cascade_order"):
        _plan(tmp_path, "study.stages=[cascade]", "study.cascade_order=[math,math]")


def test_the_adaptive_arm_is_the_mixed_arm_with_adaptive_weights(plan_root):
    _, stages, _, commands = _plan(plan_root, "study.stages=[adaptive]")
    by_name = {s.name: s for s in stages}
    mixed, adaptive = by_name["mixed-seed0"].overrides, by_name["adaptive-seed0"].overrides
    assert "mixture.mode=adaptive" in adaptive and "mixture.mode=weighted" not in adaptive
    kept = [o for o in mixed if not o.startswith(("mixture.mode", "hydra.run.dir"))]
    assert [o for o in adaptive if o in kept] == kept  # steps, weights (the start), init
    assert by_name["adaptive-seed0"].kind == "adaptive"
    assert "eval-adaptive-seed0" in by_name and by_name["eval-adaptive-seed0"].deps == ("adaptive-seed0",)


def test_the_arms_hash_like_training_stages(plan_root):
    _, _, before, _ = _plan(plan_root, "study.stages=[adaptive]")
    _, _, after, _ = _plan(plan_root, "study.stages=[adaptive]", "mixture.adaptive.floor=0.1")
    assert before["adaptive-seed0"] != after["adaptive-seed0"]
    # settings only the adaptive mixture reads leave every other stage as it was
    assert before["mixed-seed0"] == after["mixed-seed0"]
    assert before["expert-math-seed0"] == after["expert-math-seed0"]


def test_hashed_settings_are_the_structured_configs_plain_values(tmp_path):
    """Hashes read each stage's config as plain values without rebuilding an OmegaConf
    structured config; the payload must stay what the structured conversion gave, or every
    existing study folder would see its stages changed."""
    import json

    from rlvr.study.commands import hashed_settings
    from rlvr.study.plan import build_plan

    argv = ["experiment=tiny_study_arms", "study.seeds=[0]", f"paths.output_root={tmp_path}"]
    run, base = load_study(argv), user_overrides(argv)
    by_kind = {}
    for stage in build_plan(run):
        by_kind.setdefault(stage.kind, stage)
    assert {"sft", "expert", "mixed", "merge", "eval"} <= set(by_kind)
    for stage in by_kind.values():
        config = stage_config(base, stage)
        structured = OmegaConf.to_container(OmegaConf.structured(config), resolve=True)
        ours = hashed_settings(config, stage)["config"]
        assert json.dumps(ours, sort_keys=True, default=str) == json.dumps(
            _hashed_part(structured, stage.kind), sort_keys=True, default=str
        ), stage.name


def test_settings_added_later_enter_the_hash_only_away_from_their_defaults(plan_root):
    """A folder planned before ``trainer.skip_zero_advantage`` existed keeps its stages: at its
    default the setting is left out of every hash; turned off, it reruns the GRPO stages."""
    from rlvr.study.commands import UNHASHED_AT, _without_plan_only

    small = [*SMALL, f"study.out_dir={plan_root / 'later'}"]
    before = plan(small).hashes
    after = plan([*small, "trainer.skip_zero_advantage=false"]).hashes
    assert after["expert-math-seed0"] != before["expert-math-seed0"]
    for (group, key), value in UNHASHED_AT.items():
        resolved = {group: {key: value, "other": 1}}
        assert _without_plan_only(resolved)[group] == {"other": 1}, key
        assert key in _without_plan_only({group: {key: "changed"}})[group]


def test_a_packaged_instruct_model_can_start_the_study_as_its_sft_model(plan_root, smollm2_dir):
    _, stages, _, commands = _plan(
        plan_root,
        "model=smollm2-135m-instruct",
        "study.sft_model=smollm2-135m-instruct",
        "study.merges=[]",
    )
    assert "sft" not in [s.name for s in stages]
    assert f'init_from="{smollm2_dir}"' in commands["expert-math-seed0"]
