"""The ``trainer`` group's schema: steps, batches, checkpoints, precision, generation backend,
and the device facts the resource plan reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainerConfig:
    max_steps: int = 40
    save_steps: int = 20
    save_total_limit: int = 2
    # Also a checkpoint once this many minutes passed since the last one (0: only save_steps),
    # for every training stage (SFT, GRPO, MT-OPD): a job killed without warning loses at most
    # this much. SLURM's end-of-job signal checkpoints regardless (checkpoint_signals).
    save_every_min: float = 0.0
    logging_steps: int = 1
    seed: int = 0
    gradient_accumulation_steps: int = 1
    gradient_checkpointing: bool = False
    bf16: bool = False
    dataloader_num_workers: int = 0
    use_vllm: bool = False
    vllm_mode: str = "colocate"  # colocate | server
    vllm_server_base_url: str | None = None
    vllm_server_devices: int = 1  # GPUs of the vLLM server (vllm_mode=server), in compute
    # vLLM's colocated share of each device: a number, or auto (rlvr.planning.vllm: what training
    # keeps between steps leaves, which needs vllm_enable_sleep_mode). Sleep mode: TRL frees the
    # engine's weights and KV cache (level 2) while the policy trains, and wakes it to generate.
    vllm_gpu_memory_utilization: float | str = 0.3
    vllm_enable_sleep_mode: bool = False
    use_cpu: bool = False
    # One-step-ahead generation: a copy of the policy samples the next batch while the current
    # one trains (staleness <= 1 optimiser step, logged as async/staleness; rlvr.rollouts.lookahead).
    async_generation: bool = False
    # Agent rollouts run as whole episodes with KV caches kept across turns (rlvr.rollouts.tool_loop);
    # false: TRL's own tool loop, which re-encodes the conversation for every turn.
    tool_episodes: bool = True
    # Single-turn rollouts drawn by the KV-cache sampler (rlvr.rollouts.single_turn: each distinct prompt
    # prefilled once, finished rows leave the batch); false: TRL's model.generate. Plain
    # transformers generation with temperature and top-p only, on one process, data-parallel
    # ranks or FSDP ranks (in step: rlvr.rollouts.lockstep); otherwise TRL's.
    kv_sampling: bool = True
    # With kv_sampling: rows that end while the batch still decodes are graded on a background
    # thread (rlvr.rewards.early), so scoring overlaps generation; false: the whole batch is
    # graded after generation, as TRL does. Same verdicts either way. null (default): on where
    # the policy generates on an accelerator; off on CPU, where grading would take cores from
    # the sampler (measured on 2 cores: steps 5-10% slower with it).
    score_ahead: bool | None = None
    # The policy's log-prob forward in length-sorted chunks cut to the columns their rows use
    # (rlvr.lean_forward.trimmed): same log-probs, no padding to the batch's longest row. Rotary
    # models; with several processes the ranks pad to one chunk count; false: TRL's padded forward.
    trim_padding: bool = True
    # Each distinct prompt of a batch encoded once in that forward, its KV cache shared by the
    # completions sampled from it (rlvr.lean_forward.shared_prompt). One process, no gradient
    # checkpointing (off otherwise, with a log line).
    share_prompts: bool = True
    # Rows whose advantage is exactly zero (their group all scored alike) leave the update
    # (rlvr.lean_forward.zero_advantage): they add nothing to the loss or its gradient, which
    # stay the whole batch's; TRL's logged entropy and clip ratios cover the rows trained on.
    # Off by itself with a KL term, an entropy bonus, an aux loss or an entropy/off-policy mask.
    skip_zero_advantage: bool = True
    log_completions: bool = True
    num_completions_to_print: int = 0
    max_infra_error_rate: float = 0.05  # abort when verifier/infra errors exceed this share
    infra_error_min_samples: int = 32
    verifier_workers: int = 0  # 0: one per core (capped)
    verifier_timeout_s: float = 10.0
    # The resource plan (rlvr.planning): every dry run prints each stage's memory per device and
    # step time. device_memory_gib: the accelerator's memory; a stage that cannot fit fails at
    # plan time (null: plan without the check, as on CPU). micro_batch: rows per device per
    # forward; null keeps gradient_accumulation_steps, an int splits each device's share of
    # the step into micro-batches of that size, auto picks the largest that fits. The step time
    # is a FLOPs count at device_tflops x plan_mfu (training) and x plan_decode_mfu (sampling).
    device_memory_gib: float | None = None
    device_tflops: float | None = None
    plan_mfu: float = 0.35
    plan_decode_mfu: float = 0.05
    plan_prompt_tokens: int = 1024  # prompt length the plan assumes (prompts vary; say yours)
    # Time against the budget (rlvr.planning.step_time, rlvr.planning.budget): sampling is
    # bound by memory bandwidth as well as FLOPs (device_bandwidth_gbs, the accelerator's;
    # null: FLOPs only); plan_completion_tokens: the mean completion length the time estimate
    # assumes (null: the maximum, an upper bound; memory is planned at the maximum anyway);
    # plan_overhead_min: minutes a training stage spends outside its steps in each job it runs
    # in (loading the model and vLLM, saving, resuming); ddp_timeout_s: null sets TRL's
    # ddp_timeout from the plan's step time (never below the 30-minute default)
    device_bandwidth_gbs: float | None = None
    plan_completion_tokens: int | None = None
    plan_overhead_min: float = 20.0
    ddp_timeout_s: int | None = None
    micro_batch: int | str | None = None
    # What a device offers the plan (docs/resource-plan.md, "Memory"): device_memory_gib x
    # device_usable_fraction is what torch can allocate (an "80 GiB" H100 reports 79.1 GiB);
    # memory_margin_gib is kept free of everything planned (allocator fragmentation, transient
    # peaks the counts miss); trainer.micro_batch=auto fits inside it.
    device_usable_fraction: float = 0.98
    memory_margin_gib: float = 4.0
    # what the device holds beside the workload: 2 GiB on an accelerator (CUDA context, cuBLAS
    # workspaces, NCCL buffers); on CPU the trainer's resident interpreter and libraries
    # (conf/trainer/cpu.yaml), where device_memory_gib is the RAM the trainer may use
    device_runtime_gib: float = 2.0
    # Final models' dtype (rlvr.training.saving): auto = the dtype training ran in (bf16 under
    # trainer.bf16, else as model.dtype loaded it); float32 | bfloat16 | float16 force one.
    save_dtype: str = "auto"
