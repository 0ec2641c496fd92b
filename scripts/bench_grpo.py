"""GRPO step cost: rlvr's GRPO stage against a bare TRL ``GRPOTrainer`` on the same work.

    python scripts/bench_grpo.py [--steps 12] [--sft-steps 150] [--init-from FOLDER]
    python scripts/bench_grpo.py --init-from smollm2-135m-instruct --scenarios math --arms bare rlvr --steps 3
    python scripts/bench_grpo.py ... --set trainer.micro_batch=auto trainer.device_memory_gib=6

``--set``: Hydra overrides for every arm (bare's ``GRPOConfig`` is converted from the same
config, so a memory setting such as ``trainer.micro_batch`` applies to both).

Both arms train the same SFT'd tiny model on the same rows with the same ``GRPOConfig``
(rlvr's conversion of one composed config, so batch, group, lengths and optimiser agree):

- rlvr: ``rlvr.train.train`` as ``python -m rlvr.train`` runs it (mixture sampler, reward
  bridge with one function per domain, the verifier worker pool with hard time limits, the
  sandbox for code, per-domain metrics, the data-id log, metrics.jsonl);
- bare: ``trl.GRPOTrainer`` with one plain reward function that calls ``verifiers.verify`` on
  each completion in the trainer process, nothing else. Its dataset is laid out in the order
  rlvr's mixture sampler delivers prompts, read unshuffled, so both arms train on the same
  prompts at every step and, with the same seed, sample the same completions: the difference
  in step time is rlvr's own cost, not a difference in work;
- rlvr-generate: rlvr with ``trainer.kv_sampling=false``, so it samples with TRL's
  ``model.generate`` as bare does: same completions as bare, hence the overhead ratio. The
  default rlvr arm draws from the KV-cache sampler (same distribution, other draws), so its
  ratio to bare is what a user gains;
- rlvr-score-ahead: rlvr with ``trainer.score_ahead=true``: rows are graded on a background
  thread as they end while the rest of the batch decodes (the default only where generation
  runs on an accelerator; on CPU the default grades the batch after generation, as TRL does).

Each arm runs in its own process; the script samples the arm's process tree for peak RSS
(trainer plus verifier workers and sandboxes) and the arm reports its own peak. Step time is
the mean of every step after the first (on_step_begin -> on_step_end), split into generation,
reward and the rest (the update). Scenarios: ``math`` (rlvr / bare), and ``code-heavy``, a
mixed batch of three code prompts to one math prompt, where the reward's share of the step
is the number to watch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

SCENARIOS = {
    "math": ["domains=[math]"],
    "code-heavy": [
        "domains=[code,math]",
        "mixture=weighted",
        "domains.code.weight=3",
        "domains.math.weight=1",
    ],
}
COMMON = [
    "experiment=smoke",
    "logger=none",
    "eval.in_run=false",
    "trainer.save_steps=100000",
    "algo.prompts_per_step=8",
    "algo.num_generations=8",
    "algo.max_completion_length=64",
    "mixture.train_size=256",
]


ARMS = {
    "bare": [],
    "rlvr-generate": ["trainer.kv_sampling=false"],
    "rlvr-score-ahead": ["trainer.score_ahead=true"],
    "rlvr": [],
}


def arm_overrides(arm: str, scenario: str, init_from: str, steps: int, out: Path, extra: list[str]) -> list[str]:
    return [
        *COMMON,
        *SCENARIOS[scenario],
        *ARMS[arm],
        *extra,
        f"init_from={init_from}",
        f"trainer.max_steps={steps}",
        f"paths.output_root={out}",
        f"run_name=bench_{scenario}_{arm.replace('-', '_')}",
    ]


def compose_run(overrides: list[str]):
    from omegaconf import OmegaConf

    from rlvr.config.checks import validate
    from rlvr.study.commands import compose

    run = OmegaConf.to_object(compose(overrides))
    validate(run)
    return run


# -- inside an arm's process ---------------------------------------------------------------
def run_rlvr(overrides: list[str], out: Path, arm: str) -> dict:
    from rlvr.train import train

    run = compose_run(overrides)
    run_dir = out / arm  # each arm its own run: a shared folder would resume the other's
    train(run, run_dir)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    first: dict[int, dict] = {}  # the end-of-training record repeats the last step's times
    for record in records:
        if "time/step_s" in record:
            first.setdefault(record["step"], record)
    steps = [first[k] for k in sorted(first)]
    return {
        "mean_length": [r.get("completions/mean_length", 0.0) for r in steps],
        "step_s": [r["time/step_s"] for r in steps],
        "generation_s": [r["time/generation_s"] for r in steps],
        "reward_s": [r["time/reward_s"] for r in steps],
        "ahead_s": [r.get("time/reward_ahead_s", 0.0) for r in steps],
    }


def run_bare(overrides: list[str], out: Path) -> dict:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from rlvr.data.agent import training_row
    from rlvr.models.loading import load_tokenizer
    from rlvr.training import stages
    from rlvr.training.trainer_args import build_grpo_config
    from verifiers import ReasoningFormat, verify

    run = compose_run(overrides)
    rows = [training_row(r) for d in stages.domain_data(run).values() for r in d.train]
    rows = in_sampler_order(run, rows)
    fmt = ReasoningFormat(strip_think=run.algo.strip_think, format_gate=run.algo.format_gate)
    times: dict[str, list[float]] = {"step_s": [], "generation_s": [], "reward_s": []}
    clock = {"generation": 0.0, "reward": 0.0, "start": 0.0}

    def reward(prompts, completions, reference, verifier, **_):
        start = time.perf_counter()
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        scores = [verify(t, json.loads(r), v, fmt).score for t, r, v in zip(texts, reference, verifier, strict=True)]
        clock["reward"] += time.perf_counter() - start
        return scores

    class StepTimes(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            clock.update(generation=0.0, reward=0.0, start=time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            times["step_s"].append(time.perf_counter() - clock["start"])
            times["generation_s"].append(clock["generation"])
            times["reward_s"].append(clock["reward"])

    init_from = str(run.init_from)
    args = build_grpo_config(run, out / "bare")
    args.shuffle_dataset = False  # the rows are already in rlvr's order
    trainer = GRPOTrainer(
        model=init_from,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=load_tokenizer(init_from, run.model),
        callbacks=[StepTimes()],
    )
    generate = trainer._generate  # timed from outside: the trainer itself is untouched

    def timed_generate(prompts):
        start = time.perf_counter()
        try:
            return generate(prompts)
        finally:
            clock["generation"] += time.perf_counter() - start

    trainer._generate = timed_generate
    trainer.train()
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    return {**times, "mean_length": lengths}


def in_sampler_order(run, rows: list[dict]) -> list[dict]:
    """The rows in the order rlvr's mixture sampler hands them to the trainer (one entry per
    prompt; TRL repeats each for its group)."""
    from datasets import Dataset

    from rlvr.training import stages

    a = run.algo
    sampler = stages._sampler_factory(run, Dataset.from_list(rows))(
        mini_repeat_count=1, batch_size=a.prompts_per_step, repeat_count=1
    )
    order = list(sampler)[: a.prompts_per_step * run.trainer.max_steps]
    return [rows[i] for i in order]


def arm_main(args: argparse.Namespace) -> None:
    import resource

    from rlvr.runs.cli import configure_threads

    configure_threads()  # as every entry point does
    out = Path(args.out)
    overrides = arm_overrides(args.arm, args.scenario, args.init_from, args.steps, out, args.set or [])
    result = run_bare(overrides, out) if args.arm == "bare" else run_rlvr(overrides, out, args.arm)
    result["self_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (out / f"{args.arm}.json").write_text(json.dumps(result))


# -- the driver ----------------------------------------------------------------------------
def tree_peak_rss(proc: subprocess.Popen, peak: list[float]) -> None:
    """Sample the process tree's resident memory until it exits (psutil, every 0.1 s)."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            total = 0
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total / 2**20)
            time.sleep(0.1)
    except psutil.Error:
        pass


def launch(arm: str, scenario: str, init_from: str, steps: int, out: Path, extra: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--arm", arm, "--scenario", scenario]
    cmd += ["--init-from", init_from, "--steps", str(steps), "--out", str(out)]
    cmd += ["--set", *extra] if extra else []
    log = (out / f"{arm}.log").open("w")
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    peak = [0.0]
    sampler = threading.Thread(target=tree_peak_rss, args=(proc, peak), daemon=True)
    sampler.start()
    if proc.wait() != 0:
        raise SystemExit(f"{arm} arm failed; its log: {out / f'{arm}.log'}")
    sampler.join()
    result = json.loads((out / f"{arm}.json").read_text())
    result["tree_peak_rss_mb"] = peak[0]
    return result


def sft_model(steps: int, out: Path) -> str:
    """A short SFT on math and code demonstrations, so completions end and rewards vary."""
    final = out / "sft" / "final"
    cmd = [
        sys.executable,
        "-m",
        "rlvr.sft",
        "experiment=smoke",
        "domains=[math,code]",
        "logger=none",
        "mixture.heldout_size=0",
        f"sft.max_steps={steps}",
        f"paths.output_root={out}",
        f"hydra.run.dir={out / 'sft'}",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True)
    print(f"SFT ({steps} steps, math + code): {time.perf_counter() - start:.0f} s")
    return str(final)


def summary(result: dict) -> dict:
    def mean(key: str) -> float:
        values = result[key][1:] or result[key]  # the first step pays one-off set-up
        return sum(values) / len(values)

    step, gen, reward = mean("step_s"), mean("generation_s"), mean("reward_s")
    ahead = mean("ahead_s") if "ahead_s" in result else 0.0
    return {
        "step": step,
        "gen": gen,
        "reward": reward,
        "ahead": ahead,
        "update": max(step - gen - reward, 0.0),
    }


def row(name: str, result: dict) -> str:
    s = summary(result)
    return (
        f"{name:<26} {1 / s['step']:>8.3f} {s['step']:>7.2f} {s['gen']:>6.2f} {s['reward']:>7.3f}"
        f" {s['update']:>7.2f} {100 * s['reward'] / s['step']:>7.1f}% {s['ahead']:>7.3f}"
        f" {result['self_peak_rss_mb']:>9.0f} {result['tree_peak_rss_mb']:>9.0f}"
        f" {sum(result['mean_length']) / max(1, len(result['mean_length'])):>8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument(
        "--init-from",
        default=None,
        help="an SFT model folder, or a packaged model such as smollm2-135m-instruct (skips the SFT)",
    )
    parser.add_argument("--scenarios", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARMS),
        default=list(ARMS),
        help="a subset of the arms (a real model's steps are long): bare and rlvr at least",
    )
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="Hydra overrides for every arm")
    parser.add_argument("--arm", choices=sorted(ARMS), help=argparse.SUPPRESS)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not {"bare", "rlvr"} <= set(args.arms):
        parser.error("--arms needs bare and rlvr (the ratios compare them)")
    if args.arm:
        return arm_main(args)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "disabled")
    work = Path(tempfile.mkdtemp(prefix="bench_grpo_"))
    os.environ.setdefault("RLVR_CACHE", str(work / "cache"))
    from rlvr.models.packaged import ensure_packaged_model, is_packaged

    init_from = args.init_from or sft_model(args.sft_steps, work)
    if is_packaged(init_from):  # a real pretrained model, converted once into the cache
        init_from = str(ensure_packaged_model(init_from, Path(os.environ["RLVR_CACHE"]) / "models"))
    results = {}
    for scenario in args.scenarios:
        for arm in args.arms:
            results[scenario, arm] = launch(arm, scenario, init_from, args.steps, work / scenario, args.set)

    print(
        f"cpu cores: {os.cpu_count()}  load average: {os.getloadavg()[0]:.2f}  steps: {args.steps}"
        + (f"  set: {' '.join(args.set)}" if args.set else "")
    )
    header = f"{'arm':<26} {'steps/s':>8} {'step s':>7} {'gen s':>6} {'reward s':>7}"
    header += f" {'update s':>7} {'reward%':>8} {'ahead s':>7}"
    print(header + f" {'RSS MB':>9} {'tree MB':>9} {'tokens':>8}")
    for (scenario, arm), result in results.items():
        print(row(f"{scenario}/{arm}", result))
    for scenario in args.scenarios:
        print(ratios(scenario, {arm: r for (sc, arm), r in results.items() if sc == scenario}))


def ratios(scenario: str, arms: dict[str, dict]) -> str:
    """Each arm against bare TRL (and scoring ahead against the default arm), where run."""
    bare, rlvr = summary(arms["bare"]), summary(arms["rlvr"])
    rss, bare_rss = arms["rlvr"]["self_peak_rss_mb"], arms["bare"]["self_peak_rss_mb"]
    parts = [f"{scenario}:"]
    if "rlvr-generate" in arms:
        same = summary(arms["rlvr-generate"])
        parts.append(
            f"rlvr-generate / bare step time {same['step'] / bare['step']:.3f}x (same"
            " completions: rlvr's overhead, target <= 1.05 on math);"
        )
    parts.append(
        f"rlvr / bare {rlvr['step'] / bare['step']:.3f}x, generation"
        f" {rlvr['gen'] / bare['gen']:.3f}x; trainer peak RSS {rss / bare_rss:.3f}x (target"
        f" <= 1.10); reward {100 * rlvr['reward'] / rlvr['step']:.1f}% of the step (target <= 10%)"
    )
    if "rlvr-score-ahead" in arms:
        ahead = summary(arms["rlvr-score-ahead"])
        parts.append(
            f"; scoring ahead: reward {100 * ahead['reward'] / ahead['step']:.1f}% of the step,"
            f" step {ahead['step'] / rlvr['step']:.3f}x"
        )
    return " ".join(parts)


if __name__ == "__main__":
    main()
