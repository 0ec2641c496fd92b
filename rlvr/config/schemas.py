"""Typed config schemas, one dataclass per config group, registered with Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

from rlvr.config.analysis import AnalyzeConfig
from rlvr.config.filter import FilterConfig
from rlvr.config.mixture import MixtureConfig
from rlvr.config.trainer import TrainerConfig
from tasks.schema import DOMAINS


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key, the value and the fix."""


@dataclass
class TinySpecConfig:
    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 512
    max_position_embeddings: int = 512
    rope_theta: float = 10000.0
    seed: int = 0


@dataclass
class ModelConfig:
    name: str = "tiny"  # "tiny" (embedded), a Hub id, or a local folder
    revision: str | None = None
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto
    attn_implementation: str | None = None
    trust_remote_code: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    tiny: TinySpecConfig = field(default_factory=TinySpecConfig)
    # the model's config.json fields (hidden_size, num_hidden_layers, num_attention_heads,
    # num_key_value_heads, head_dim, intermediate_size, vocab_size, tie_word_embeddings,
    # max_position_embeddings) for the resource plan when no local config.json is at hand
    shape: dict[str, Any] = field(default_factory=dict)


@dataclass
class DomainConfig:
    """One domain's data and scoring; the key in ``domains`` is the domain name.

    ``data_files``: local copies of Hub data, read instead of the Hub (JSONL/JSON, optionally
    gzipped, or Parquet). Either ``{task: [path, ...]}`` naming any of this domain's tasks, or a
    plain ``[path, ...]`` when the domain has exactly one train task (it goes to that task).
    ``resolve_files``: ``{hub id: [path, ...]}``, local copies of the source datasets that the
    Nemotron blend's ``_hf_placeholder`` rows index into (e.g. BytedTsinghua-SIA/DAPO-Math-17k,
    Skywork/Skywork-OR1-RL-Data), whole splits in Hub row order; needs the blend itself in
    ``data_files``. Placeholders left unresolved are dropped and counted. Missing files fail
    the config check, naming the path.
    """

    train_tasks: list[str] = field(default_factory=list)
    eval_tasks: list[str] = field(default_factory=list)
    weight: float = 1.0  # used by mixture=weighted
    verifier_options: dict[str, Any] = field(default_factory=dict)
    data_files: Any = None  # dict[str, list[str]] | list[str] | None (see the docstring)
    resolve_files: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class ParallelRewardConfig:
    """Parallel-reasoning reward terms over every domain's verifier (``rlvr.rewards.parallel``):
    preset none | threadweaver | parason, ``terms`` overriding its coefficients
    (correct, rho, rho_clip, latency, latency_norm, subtask, trial, malformed); ``metrics``
    logs ``<domain>/parallel/...`` with preset none (the reward stays the verifier's)."""

    preset: str = "none"
    terms: dict[str, float] = field(default_factory=dict)
    metrics: bool = False


@dataclass
class AlgoConfig:
    name: str = "grpo"
    loss_type: str = "grpo"
    learning_rate: float = 3e-5
    lr_scheduler_type: str = "constant"
    warmup_steps: int = 0
    num_generations: int = 8
    prompts_per_step: int = 4
    num_iterations: int = 1
    epsilon: float = 0.2
    epsilon_high: float | None = None
    beta: float = 0.0
    temperature: float = 1.0
    top_p: float = 1.0
    max_completion_length: int = 48
    scale_rewards: str = "group"  # group | batch | none
    importance_sampling_level: str = "token"  # token | sequence (GSPO)
    mask_truncated_completions: bool = False
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    vllm_importance_sampling_correction: bool = True
    # TRL's correction of the vLLM/trainer mismatch: token_truncate | token_mask |
    # sequence_truncate | sequence_mask, ratios capped (truncate) or masked above the clip
    # (TRL's defaults; M2RL: token_truncate at C = 2)
    vllm_importance_sampling_mode: str = "sequence_mask"
    vllm_importance_sampling_clip_max: float = 3.0
    strip_think: bool = True
    format_gate: bool = False  # M2RL: no </think> -> score 0
    parallel_reward: ParallelRewardConfig = field(default_factory=ParallelRewardConfig)


@dataclass
class SFTConfig:
    # warm start inside rlvr.train when no init checkpoint is given; None: only the embedded
    # tiny model (the micro-suite recipe, lr 2e-3, would overwrite a pretrained model's skills)
    enabled: bool | None = None
    max_steps: int = 600
    learning_rate: float = 2e-3
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 20
    warmup_ratio: float = 0.0  # a share of max_steps instead of warmup_steps (not both)
    # the floor of lr_scheduler_type=cosine_with_min_lr (transformers' min_lr)
    min_learning_rate: float | None = None
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    batch_size: int = 32  # rows per device per optimizer step (global: x processes)
    examples_per_domain: int = 4000
    # per-domain counts over examples_per_domain: a domain the model learns fast (code) gets
    # fewer demonstrations, so the SFT model leaves RL room there too
    domain_examples: dict[str, int] = field(default_factory=dict)
    weight_decay: float = 0.0
    max_length: int = 256
    datasets: list[str] = field(default_factory=list)  # Hub chat datasets; empty: micro-suite demos
    # checkpoints (weights, optimizer, RNG) every save_steps steps, so a killed SFT resumes
    # (resume=true; the study always passes it) instead of starting over; 0 saves none
    save_steps: int = 100
    save_total_limit: int = 1
    # The loss over length-sorted chunks cut to their rows' columns (rlvr.lean_forward.sft):
    # the padded batch's loss and gradient without its padding (half of tiny_study's SFT
    # tokens); one process (several fall back to TRL's padded loss, saying so). Its float
    # rounding differs from the padded forward's: false reproduces folders made before it.
    trim_padding: bool = True


@dataclass
class DistillConfig:
    """Multi-teacher on-policy distillation (``rlvr.distill``): the student samples, and each
    row's tokens are scored by the teacher of the row's domain."""

    name: str = "tiny"
    # domain -> teacher model folder (with servers too: the tokenizer check and provenance)
    teachers: dict[str, str] = field(default_factory=dict)
    # train: every teacher loaded once beside the student (eval, no grad) | server: one vLLM
    # server per teacher (``teacher_servers``), for teachers too large to hold beside it
    teacher_device: str = "train"
    teacher_servers: dict[str, str] = field(default_factory=dict)  # domain -> server base URL
    # sampled_token (M2RL): advantage = teacher - student log-prob of each sampled token |
    # full_vocab: TRL's generalized JSD over the whole next-token distribution (``beta``)
    objective: str = "sampled_token"
    beta: float = 1.0  # full_vocab only: 0 forward KL, 0.5 JSD, 1 reverse KL
    learning_rate: float = 1e-6
    lr_scheduler_type: str = "constant"
    warmup_steps: int = 0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999  # M2RL: 0.98
    weight_decay: float = 0.0  # M2RL: 0.1
    max_grad_norm: float = 1.0
    prompts_per_step: int = 4
    samples_per_prompt: int = 4
    temperature: float = 1.0
    top_p: float = 1.0
    max_completion_length: int = 48
    max_steps: int | None = None  # None: trainer.max_steps


@dataclass
class PeftConfig:
    enabled: bool = False
    r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: ["all-linear"])


@dataclass
class EvalConfig:
    k: int = 8  # samples per prompt (Avg@k, pass@k)
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    greedy: bool = True  # also report greedy accuracy
    batch_size: int = 64
    max_prompts: int | None = None  # per benchmark
    backend: str = "transformers"  # transformers | vllm
    tasks: list[str] = field(default_factory=list)
    # rlvr.evaluate's samples per prompt per benchmark (task -> K); a task not named uses
    # ``k``, as does the in-run held-out evaluation. Keys: benchmarks of ``tasks`` or
    # registered tasks (a study narrows ``tasks`` per evaluation stage and keeps the map)
    k_by_task: dict[str, int] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)  # "label=path" or a path (label: folder name)
    out_dir: str | None = None  # study folder; None: <paths.output_root>/<experiment>
    seed: int = 0
    workers: int = 0  # verifier workers (0: one per core, capped)
    timeout_s: float = 10.0  # per-verification hard time limit
    # The </think> format gate at evaluation: None applies algo.format_gate (the gate the
    # models were trained under); false for a model never trained to think, as a base model
    # (the study sets it for its base row). Each summary records the gate it was graded with.
    format_gate: bool | None = None
    # Prompts per shard: each shard's records are written as it finishes, and a rerun skips
    # the shards written (a time-out loses one shard). 0: the benchmark is one shard. A
    # shard's samples are seeded by eval.seed + its first prompt's index.
    shard_prompts: int = 256
    # Held-out evaluation inside rlvr.train / rlvr.sft (before and after). A study turns it
    # off: there every model is evaluated once, by rlvr.evaluate, in its evaluation stage.
    in_run: bool = True
    # Generated tokens at most per in-run evaluation (rows x (k + greedy) x max_new_tokens),
    # spread over the ranks; past it, rows are dropped evenly across domains, with a warning.
    in_run_token_budget: int = 2_000_000


@dataclass
class MergeConfig:
    method: str = "ties"
    params: dict[str, Any] = field(default_factory=dict)
    base: str | None = None
    models: list[str] = field(default_factory=list)
    seed: int = 0
    dtype: str = "float32"  # mergekit computes in it
    out_dtype: str = "auto"  # the merged weights' dtype; auto: the inputs' (float32 if mixed)
    name: str | None = None  # output label; None: the preset/method name
    out_dir: str | None = None  # None: <paths.output_root>/<experiment>/merges/<name>


@dataclass
class ReportConfig:
    study_dir: str | None = None  # None: <paths.output_root>/<experiment>
    metric: str = "avg_at_k"  # avg_at_k | pass_at_k | pass_at_1 | greedy_accuracy
    runs: dict[str, str] = field(default_factory=dict)  # extra run folders: label -> path
    roles: dict[str, str] = field(default_factory=dict)  # label -> base|sft|expert|merge|mixed


@dataclass
class LoggerConfig:
    name: str = "wandb"  # wandb | none
    project: str = "rlvr"
    entity: str | None = None
    mode: str = "offline"  # offline | online | disabled


@dataclass
class PathsConfig:
    output_root: str = "outputs"
    cache_dir: str = "~/.cache/rlvr"
    data_dir: str = "../shared/data"


@dataclass
class SandboxConfig:
    backend: str = "auto"  # auto | nsjail | bwrap | unshare | rlimit (strongest available first)
    max_workers: int = 8
    memory_mb: int = 1024
    time_limit_s: float = 10.0


@dataclass
class StudyConfig:
    """The plan of ``python -m rlvr.study``: which arms, seeds, merges and benchmarks."""

    domains: list[str] = field(default_factory=lambda: list(DOMAINS))
    domain_prefix: str = ""  # domain config option = prefix + domain (e.g. "m2rl/")
    seeds: list[int] = field(default_factory=lambda: [0])
    mixed: bool = True  # the mixed GRPO arm, one per seed
    merges: list[str] = field(default_factory=list)  # presets or mergekit methods, per seed
    benchmarks: list[str] = field(default_factory=list)  # empty: eval.tasks
    stages: list[str] = field(default_factory=list)  # optional stages by name (distill, ...)
    # per arm (a domain's expert, or "mixed"): Hydra overrides for that arm's training stages
    # only, e.g. {agent: [algo.max_completion_length=192]}; its evaluations are the study's
    arm_overrides: dict[str, list[str]] = field(default_factory=dict)
    # study.stages=[cascade]: the domains in training order; empty: the least room first
    cascade_order: list[str] = field(default_factory=list)
    evaluate_base: bool = True  # the base model is a row of the tables too
    sft_model: str | None = None  # an existing SFT model: no SFT stage
    jobs: int = 1  # stages at once (local launchers); CPU threads are split between them
    launcher: str = "local"  # local | submitit_local | slurm
    # local launcher: fork each python -m stage from a server that imported torch,
    # transformers and TRL once (rlvr/study/forkserver.py), instead of 5-10 s of imports each
    warm_start: bool = True
    accelerate: str | None = None  # conf/accelerate/<name>.yaml for the training stages
    slurm: dict[str, Any] = field(default_factory=dict)  # submitit executor parameters
    # per stage kind (sft, expert, mixed, merge, eval, report), over ``slurm``: e.g. one GPU
    # for an evaluation, none for a merge
    slurm_by_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    out_dir: str | None = None  # None: <paths.output_root>/<experiment>
    dry_run: bool = False  # print the plan and stop
    force: bool = False  # accept a folder that holds a different plan's outputs
    cancel: bool = False  # scancel the SLURM jobs the study folder's study.json lists, and stop
    poll_s: float = 1.0  # how often the launcher checks its stages
    # A paper's recipe (CSV: stage, setting, paper_value, source, note) under paths.data_dir:
    # the dry run prints each setting beside this study's (rlvr.study.fidelity)
    recipe: str | None = None
    # "<stage>.<setting>" of the recipe -> why this study differs there
    deviations: dict[str, str] = field(default_factory=dict)


@dataclass
class RunConfig:
    experiment: str = "default"
    stage: str = "rl"  # rl | sft | distill (which entry point composed this)
    run_name: str = "default"
    init_from: str | None = None  # checkpoint folder (e.g. an SFT run) to start from
    resume: bool = False
    dry_run: bool = False  # print the stage's resource plan (rlvr.planning) and stop
    model: ModelConfig = field(default_factory=ModelConfig)
    domains: dict[str, DomainConfig] = field(default_factory=dict)
    mixture: MixtureConfig = field(default_factory=MixtureConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    peft: PeftConfig = field(default_factory=PeftConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    merge: MergeConfig = field(default_factory=MergeConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    analyze: AnalyzeConfig = field(default_factory=AnalyzeConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    study: StudyConfig = field(default_factory=StudyConfig)


def register_configs() -> None:
    """Register the root schema so Hydra type-checks every composed config against it."""
    ConfigStore.instance().store(name="rlvr_schema", node=RunConfig)
