"""This study's value of each M2RL recipe setting, read from the configs of the stages it launches.

One extractor per ``<stage>.<setting>`` row of ``m2rl_paper/recipe.csv``: it renders the value
the planned stage configs decide in the recipe's own words, so ``rlvr.study.fidelity`` can set
it beside the paper's value and tell a match from a deviation. Where several stages decide a
setting (every expert and the mixed arm for ``rl`` rows) and they disagree, each is named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rlvr.config import RunConfig

Render = Callable[[RunConfig], str]


@dataclass(frozen=True)
class StudyConfigs:
    """The composed config of every stage a study launches, grouped by what it trains."""

    study: RunConfig  # the study's own config
    processes: int  # ranks of a training stage (study.accelerate)
    sft: RunConfig | None  # None: study.sft_model names an existing SFT model
    sft_path: str  # the SFT model the RL arms, merges and MT-OPD start from
    expert_paths: frozenset[str]  # the experts' final model folders
    experts: Mapping[str, RunConfig]  # stage name -> config
    mixed: Mapping[str, RunConfig]
    mt_opd: Mapping[str, RunConfig]
    merges: Mapping[str, RunConfig]
    evals: Mapping[str, RunConfig]
    report: RunConfig | None

    @property
    def grpo(self) -> dict[str, RunConfig]:
        return {**self.experts, **self.mixed}


def number(value: float | None) -> str:
    """A number as the recipe writes it: 2e-6, 0.98, 32768."""
    if value is None:
        return "none"
    mantissa, _, exponent = f"{value:g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def each(configs: Mapping[str, RunConfig], render: Render) -> str:
    """One value when the stages agree; otherwise every stage's, named."""
    if not configs:
        return "not planned"
    values = {name: render(run) for name, run in configs.items()}
    if len(set(values.values())) == 1:
        return next(iter(values.values()))
    return "; ".join(f"{name}: {value}" for name, value in values.items())


def _lr(rate: float, schedule: str, warmup: int) -> str:
    return f"{number(rate)} {schedule}" + (f" after {warmup} warmup steps" if warmup else "")


def _qwen3(run: RunConfig) -> bool:
    return "qwen3" in f"{run.model.name} {run.model.shape.get('model_type', '')}".lower()


def _chat_format(run: RunConfig) -> str:
    if not _qwen3(run):
        return f"the chat template of {run.model.name}"
    thinking = run.model.chat_template_kwargs.get("enable_thinking", True)
    return "Qwen3 ChatML with think blocks" if thinking else "Qwen3 ChatML without thinking"


def _stop_token(run: RunConfig) -> str:
    # the template's turn end stops generation beside the tokenizer's own end token
    return "151645 (<|im_end|>)" if _qwen3(run) else f"the end tokens of {run.model.name}"


def _sft_schedule(run: RunConfig) -> str:
    s = run.sft
    schedule = s.lr_scheduler_type
    if schedule == "cosine_with_min_lr":
        schedule = f"cosine to {number(s.min_learning_rate)}"
    if s.warmup_ratio:
        return f"{schedule} with warmup fraction {number(s.warmup_ratio)}"
    return f"{schedule} with {s.warmup_steps} warmup steps"


def _sft_loss(run: RunConfig) -> str:
    # rlvr.training.sft.loss_options: chat (messages) data trains its assistant turns only
    if run.sft.datasets:
        return "assistant tokens only"
    return "completion tokens of prompt-completion demonstrations"


def _algorithm(run: RunConfig) -> str:
    scale = {"group": "group mean and std", "batch": "group mean, batch std", "none": "group mean"}
    return f"GRPO ({scale[run.algo.scale_rewards]} normalisation)"


def _rollout_batch(run: RunConfig) -> str:
    a = run.algo
    updates = "one optimizer step" if a.num_iterations == 1 else f"{a.num_iterations} steps"
    return f"{a.prompts_per_step * a.num_generations} ({updates} per rollout batch)"


def _off_policy(run: RunConfig) -> str:
    a = run.algo
    if not run.trainer.use_vllm:
        return "none needed (the trainer samples its own completions)"
    if not a.vllm_importance_sampling_correction:
        return "none (algo.vllm_importance_sampling_correction=false)"
    level, how = a.vllm_importance_sampling_mode.split("_")
    kind = "truncated" if how == "truncate" else "masked"
    clip = number(a.vllm_importance_sampling_clip_max)
    return f"{kind} importance sampling per {level} with clip C={clip}"


def _reward(run: RunConfig) -> str:
    gate = "behind the think-format gate" if run.algo.format_gate else "without a format gate"
    return f"binary per domain verifier {gate}"


def _dynamic_sampling(c: StudyConfigs) -> str:
    return "off; prompts filtered by pass rate first" if "filter" in c.study.study.stages else "off"


def _routing(run: RunConfig) -> str:
    if sorted(run.distill.teachers) == sorted(run.domains):
        return "per prompt by its domain (rm_type)"
    return f"teachers for {sorted(run.distill.teachers)} of {sorted(run.domains)}"


def _advantage(run: RunConfig) -> str:
    if run.distill.objective == "sampled_token":
        return "teacher log-prob minus student log-prob per token"
    return f"generalized JSD over the vocabulary (beta {number(run.distill.beta)})"


def _distill_steps(run: RunConfig) -> str:
    d = run.distill
    return str(d.max_steps if d.max_steps is not None else run.trainer.max_steps)


def _merges(c: StudyConfigs, methods: tuple[str, ...], render: Render) -> str:
    return each({n: r for n, r in c.merges.items() if r.merge.name in methods}, render)


def _ties_keep(run: RunConfig) -> str:
    density = run.merge.params.get("density", 1.0)
    return f"top {number(100 * density)}% magnitude per tensor (mergekit density {density})"


def _dare_drop(run: RunConfig) -> str:
    drop = number(1 - run.merge.params.get("density", 1.0))
    rescale = run.merge.params.get("rescale", True)
    return f"{drop} with rescale 1/(1-{drop})" if rescale else f"{drop} without rescale"


def _ta_scale(run: RunConfig) -> str:
    p = run.merge.params
    how = "normalised" if p.get("normalize") else "sum of task vectors"
    return f"{number(p.get('weight', 1.0))} ({how})"


def _k(benchmark: str) -> Render:
    return lambda run: str(run.eval.k_by_task.get(benchmark, run.eval.k))


def _k_other(run: RunConfig) -> str:
    named = ("aime24", "gpqa_diamond", "ifbench")
    ks = {t: run.eval.k_by_task.get(t, run.eval.k) for t in run.eval.tasks if t not in named}
    return ", ".join(f"{t} {k}" for t, k in ks.items()) or "none evaluated"


METRICS = {
    "avg_at_k": "Avg@K accuracy",
    "pass_at_k": "pass@K",
    "pass_at_1": "pass@1",
    "greedy_accuracy": "greedy accuracy",
}


def _sft_batch(c: StudyConfigs) -> int:
    """SFT rows per optimizer step: ``sft.batch_size`` on each training rank."""
    return c.sft.sft.batch_size * c.processes if c.sft else 0


def _sft(render: Render) -> Callable[[StudyConfigs], str]:
    return lambda c: render(c.sft) if c.sft else "not planned"


def _rl(render: Render) -> Callable[[StudyConfigs], str]:
    return lambda c: each(c.grpo, render)


def _opd(render: Render) -> Callable[[StudyConfigs], str]:
    return lambda c: each(c.mt_opd, render)


def _eval(render: Render) -> Callable[[StudyConfigs], str]:
    return lambda c: each(c.evals, render)


Extractor = Callable[[StudyConfigs], str]
EXTRACTORS: dict[str, Extractor] = {
    "all.base_model": lambda c: c.study.model.name.rsplit("/", 1)[-1],
    "all.chat_format": lambda c: _chat_format(c.study),
    "all.stop_token": lambda c: _stop_token(c.study),
    "sft.data": _sft(lambda r: ", ".join(r.sft.datasets) or "micro-suite demonstrations"),
    "sft.epochs": lambda c: _sft(lambda r: f"{r.sft.max_steps} steps of {_sft_batch(c)} rows")(c),
    "sft.global_batch": lambda c: str(_sft_batch(c)),
    "sft.learning_rate": _sft(lambda r: number(r.sft.learning_rate)),
    "sft.lr_schedule": _sft(_sft_schedule),
    "sft.adam_betas": _sft(lambda r: f"{number(r.sft.adam_beta1)}/{number(r.sft.adam_beta2)}"),
    "sft.weight_decay": _sft(lambda r: number(r.sft.weight_decay)),
    "sft.loss_mask": _sft(_sft_loss),
    "sft.max_tokens_per_gpu": _sft(lambda r: f"{r.sft.max_length} tokens per row, padded"),
    "rl.algorithm": _rl(_algorithm),
    "rl.group_size": _rl(lambda r: str(r.algo.num_generations)),
    "rl.prompts_per_step": _rl(lambda r: str(r.algo.prompts_per_step)),
    "rl.global_batch": _rl(_rollout_batch),
    "rl.steps_expert": lambda c: each(c.experts, lambda r: str(r.trainer.max_steps)),
    "rl.steps_mixed": lambda c: each(c.mixed, lambda r: str(r.trainer.max_steps)),
    "rl.max_response_length": _rl(lambda r: str(r.algo.max_completion_length)),
    "rl.max_prompt_length": _rl(lambda r: "no limit (prompts are passed whole)"),
    "rl.temperature": _rl(lambda r: number(r.algo.temperature)),
    "rl.top_p": _rl(lambda r: number(r.algo.top_p)),
    "rl.learning_rate": _rl(lambda r: _lr(r.algo.learning_rate, r.algo.lr_scheduler_type, r.algo.warmup_steps)),
    "rl.adam_betas": _rl(lambda r: f"{number(r.algo.adam_beta1)}/{number(r.algo.adam_beta2)}"),
    "rl.weight_decay": _rl(lambda r: number(r.algo.weight_decay)),
    "rl.clip_low": _rl(lambda r: number(r.algo.epsilon)),
    "rl.clip_high": _rl(lambda r: number(r.algo.epsilon_high)),
    "rl.kl_coef": _rl(lambda r: number(r.algo.beta)),
    "rl.entropy_coef": _rl(lambda r: "0.0"),  # TRL's GRPO loss has no entropy bonus
    "rl.off_policy_correction": _rl(_off_policy),
    "rl.load_balancing": _rl(lambda r: "rows split evenly across data-parallel ranks"),
    "rl.dynamic_sampling": _dynamic_sampling,
    "rl.reward": _rl(_reward),
    "mt_opd.student_init": lambda c: each(
        c.mt_opd, lambda r: "SFT model" if r.init_from == c.sft_path else str(r.init_from)
    ),
    "mt_opd.teacher_routing": _opd(_routing),
    "mt_opd.advantage": _opd(_advantage),
    "mt_opd.prompts_per_step": _opd(lambda r: str(r.distill.prompts_per_step)),
    "mt_opd.samples_per_prompt": _opd(lambda r: str(r.distill.samples_per_prompt)),
    "mt_opd.global_batch": _opd(lambda r: str(r.distill.prompts_per_step * r.distill.samples_per_prompt)),
    "mt_opd.steps": _opd(_distill_steps),
    "mt_opd.learning_rate": _opd(
        lambda r: _lr(r.distill.learning_rate, r.distill.lr_scheduler_type, r.distill.warmup_steps)
    ),
    "mt_opd.adam_betas": _opd(lambda r: f"{number(r.distill.adam_beta1)}/{number(r.distill.adam_beta2)}"),
    "mt_opd.weight_decay": _opd(lambda r: number(r.distill.weight_decay)),
    "mt_opd.max_response_length": _opd(lambda r: str(r.distill.max_completion_length)),
    "mt_opd.temperature": _opd(lambda r: number(r.distill.temperature)),
    "merge.base": lambda c: each(c.merges, lambda r: "SFT model" if r.merge.base == c.sft_path else str(r.merge.base)),
    "merge.inputs": lambda c: each(
        c.merges,
        lambda r: (
            "single-domain RL experts"
            if set(r.merge.models) <= c.expert_paths
            else f"{len(r.merge.models)} models, not all experts"
        ),
    ),
    "merge.ties_keep": lambda c: _merges(c, ("ties",), _ties_keep),
    "merge.dare_drop": lambda c: _merges(c, ("ties_dare", "ta_dare"), _dare_drop),
    "merge.task_arithmetic_scale": lambda c: _merges(c, ("task_arithmetic",), _ta_scale),
    "eval.metric": lambda c: METRICS[c.report.report.metric] if c.report else "no report",
    "eval.temperature": _eval(lambda r: number(r.eval.temperature)),
    "eval.top_p": _eval(lambda r: number(r.eval.top_p)),
    "eval.max_new_tokens": _eval(lambda r: str(r.eval.max_new_tokens)),
    "eval.k_aime24": _eval(_k("aime24")),
    "eval.k_gpqa_diamond": _eval(_k("gpqa_diamond")),
    "eval.k_ifbench": _eval(_k("ifbench")),
    "eval.k_other": _eval(_k_other),
}
