"""The seam to TRL: every private member of TRL's trainers (and transformers' ``Trainer``) rlvr
overrides or reads, with what TRL does, what we change and why.

The overrides live in ``rlvr.training.grpo.RLVRGRPOTrainer`` and
``rlvr.distillation.trainer.RoutedDistillationTrainer``; everything else reads TRL's private
state through the accessors below, never directly. ``tests/test_trl_seam.py`` checks each
contract against the installed TRL (the member exists, takes the parameters we pass or
override with, is assigned where we read it), so a TRL upgrade that moves one fails one named
test that says what to re-check. Supported: TRL 1.16 with transformers 5.x (``pyproject.toml``);
moving the range is in docs/training.md#moving-trl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Contract:
    """One private member: ``owner`` (``GRPOTrainer``, ``DistillationTrainer``, ``Trainer``,
    ``PreTrainedModel``),
    ``kind`` (``override``, ``call``, ``attribute``), the parameters we rely on, in order."""

    owner: str
    member: str
    kind: str
    params: tuple[str, ...]
    trl_does: str
    we_change: str
    why: str


_G, _D, _T = "GRPOTrainer", "DistillationTrainer", "Trainer"

CONTRACTS: tuple[Contract, ...] = (
    # --- GRPO overrides (rlvr.training.grpo) ---------------------------------------------------
    Contract(
        _G,
        "_get_train_sampler",
        "override",
        ("dataset",),
        "a RepeatSampler over the shuffled dataset",
        "the mixture sampler (natural, weighted, scheduled, adaptive quotas per step)",
        "domain shares per step are the study's independent variable; no public hook builds the sampler",
    ),
    Contract(
        _G,
        "_get_per_token_logps_and_entropies",
        "override",
        (
            "model",
            "input_ids",
            "attention_mask",
            "logits_to_keep",
            "batch_size",
            "compute_entropy",
            "compute_aux_loss",
        ),
        "one padded forward per batch slice: per-token log-probs (and entropies)",
        "length-sorted chunks trimmed to their rows' columns, each distinct prompt encoded once; "
        "TRL's forward for multimodal inputs and the aux loss",
        "the same log-probs at a fraction of the padded forward's cost (rlvr.lean_forward)",
    ),
    Contract(
        _G,
        "_compute_loss",
        "override",
        ("model", "inputs"),
        "the clipped policy loss over every row of the batch",
        "the same loss over the rows with a nonzero advantage, rescaled to the same value",
        "rows with zero advantage add no gradient; their forward and backward are skipped",
    ),
    Contract(
        _G,
        "_generate_and_score_completions",
        "override",
        ("inputs",),
        "generates, rewards and computes advantages for one generation batch",
        "logs the prompt ids a step trains on, feeds the adaptive mixture its learning signal, "
        "logs mixture weights; one-step-ahead generation takes its ratio against the sampler",
        "data provenance per step and the adaptive mixture need the batch and its advantages",
    ),
    Contract(
        _G,
        "_generate",
        "override",
        ("prompts",),
        "generates completions (single turns, then the tool loop)",
        "times generation and marks the first turn for the episode sampler",
        "the time split (generation, grading, update) and whole-episode rollouts",
    ),
    Contract(
        _T,
        "get_batch_samples",
        "override",
        ("epoch_iterator", "num_batches", "device"),
        "takes this step's batches from the dataloader",
        "also takes the next step's, so its generation starts one step ahead",
        "trainer.async_generation",
    ),
    Contract(
        _G,
        "_generate_single_turn",
        "override",
        ("prompt_ids", "images", "multimodal_fields", "num_generations", "has_tool_images"),
        "one turn of sampling with transformers' generate, vLLM or continuous batching",
        "the KV-cache sampler (and grading ahead), whole tool episodes, or the batch sampled ahead",
        "CPU and small-GPU sampling speed; agent episodes without re-encoding each turn",
    ),
    Contract(
        _G,
        "_tool_call_loop",
        "override",
        ("prompts", "prompt_ids", "completion_ids", "completions", "logprobs", "images", "multimodal_fields"),
        "runs tool calls turn by turn and returns (tool_mask, completions, completion_ids, "
        "logprobs, tool_call_count, tool_failure_count, tool_images)",
        "hands over the episodes rlvr.rollouts.tool_loop already ran, in the same shapes",
        "the episodes were sampled whole in _generate_single_turn",
    ),
    Contract(
        _G,
        "_save_checkpoint",
        "override",
        ("model", "trial"),
        "writes the checkpoint folder (model, optimizer, scheduler, trainer state, RNG)",
        "first writes the batch sampled ahead and the adaptive mixture's state into it",
        "a resumed run continues the same data and weights; a callback's on_save would run after "
        "the folder already looks complete, so a kill in between would resume without them",
    ),
    Contract(
        _G,
        "_load_optimizer_and_scheduler",
        "override",
        ("checkpoint",),
        "restores optimizer and scheduler from a checkpoint",
        "also restores the batch sampled ahead and the adaptive mixture's state",
        "the counterpart of _save_checkpoint",
    ),
    # --- GRPO state and helpers we call or read ------------------------------------------------
    Contract(
        _G,
        "_tokenize_prompts",
        "call",
        ("prompts",),
        "tokenizes chat prompts as generation will",
        "nothing",
        "the next step's prompts for generation ahead",
    ),
    Contract(
        _G,
        "_get_tool_suffix_ids",
        "call",
        ("tool_messages",),
        "token ids of tool results as the chat template renders them",
        "nothing",
        "episodes append tool results as TRL does",
    ),
    Contract(
        _T,
        "_get_num_items_in_batch",
        "call",
        ("batch_samples", "device"),
        "counts the items in the batches taken",
        "nothing",
        "get_batch_samples returns it",
    ),
    Contract(
        _T,
        "_get_output_dir",
        "call",
        ("trial",),
        "the run's output folder",
        "nothing",
        "where _save_checkpoint writes",
    ),
    Contract(
        _T,
        "_load_from_checkpoint",
        "call",
        ("resume_from_checkpoint", "model"),
        "loads a checkpoint's weights into the model",
        "nothing",
        "loading only the weights of a checkpoint (rlvr.training.checkpoints)",
    ),
    Contract(
        _G,
        "_tokenizer",
        "attribute",
        (),
        "the text tokenizer (of the processor for VLMs)",
        "nothing",
        "stop ids, padding, response parsing",
    ),
    Contract(
        _G,
        "_is_vlm",
        "attribute",
        (),
        "whether the processing class is a processor",
        "nothing",
        "our samplers serve text models only",
    ),
    Contract(
        _G,
        "_dist",
        "attribute",
        (),
        "the distributed backend (FSDP full-parameter summons)",
        "nothing",
        "sampling under FSDP gathers parameters as TRL's generation does",
    ),
    Contract(
        _G,
        "_metrics",
        "attribute",
        (),
        "per-step metric lists TRL averages into its logs",
        "adds our keys",
        "our per-step metrics appear in the same log records",
    ),
    Contract(
        _G,
        "_entropy_bonus_enabled",
        "attribute",
        (),
        "whether the loss has an entropy term",
        "nothing",
        "rows with zero advantage still carry an entropy gradient then",
    ),
    Contract(
        _G,
        "_env_tools",
        "attribute",
        (),
        "tools per environment name",
        "nothing",
        "episodes render each environment's tool schemas",
    ),
    Contract(
        _G,
        "_batch_environments",
        "attribute",
        (),
        "each row's environment name",
        "nothing",
        "episodes route rows to their environment",
    ),
    Contract(
        _G,
        "_sync_tool_dicts",
        "attribute",
        (),
        "each row's synchronous tools by name",
        "nothing",
        "episodes call the row's tools",
    ),
    Contract(
        _G,
        "_async_tool_dicts",
        "attribute",
        (),
        "each row's asynchronous tools by name",
        "nothing",
        "episodes fall back to TRL's loop for async tools",
    ),
    Contract(
        "PreTrainedModel",
        "gradient_checkpointing_enable",
        "call",
        ("gradient_checkpointing_kwargs",),
        "TRL 1.16 toggles checkpointing around generation through this alias "
        "(trl.models.utils.disable_gradient_checkpointing); transformers 5 deprecates it for "
        "activation_checkpointing_enable and removes it in v6",
        "nothing: our own code asks for is_activation_checkpointing first (rlvr.lean_forward)",
        "TRL needs the alias: keep transformers < 6 until TRL calls the new names",
    ),
    # --- MT-OPD overrides (rlvr.distillation.trainer) ------------------------------------------
    Contract(
        _D,
        "_get_train_sampler",
        "override",
        ("dataset",),
        "a sampler over the prompts",
        "the per-domain mixture sampler",
        "teachers are routed by the row's domain; shares per step",
    ),
    Contract(
        _D,
        "_generate",
        "override",
        ("prompts",),
        "student rollouts",
        "times them",
        "the time split",
    ),
    Contract(
        _D,
        "_generate_and_score_completions",
        "override",
        ("inputs",),
        "student rollouts and their tokens",
        "keeps each row's domain for teacher routing",
        "each prompt's teacher is its domain's expert (M2RL's MT-OPD)",
    ),
    Contract(
        _D,
        "_compute_loss",
        "override",
        ("unwrapped_student", "inputs", "num_items_in_batch"),
        "the student-teacher divergence against one teacher",
        "per row, the teacher of the row's domain; per-domain KL and token counts logged",
        "multi-teacher distillation; TRL routes to one teacher",
    ),
    Contract(
        _D,
        "_get_last_hidden_state",
        "override",
        ("unwrapped_model", "input_ids", "attention_mask", "logits_to_keep"),
        "the final hidden states for the fused head",
        "the same, timed",
        "the time split",
    ),
)


# --- accessors: the only places outside the two trainer subclasses that read TRL's privates ---
def tokenizer(trainer: Any) -> Any:
    return trainer._tokenizer


def is_vlm(trainer: Any) -> bool:
    return bool(trainer._is_vlm)


def distributed(trainer: Any) -> Any:
    return trainer._dist


def entropy_bonus_on(trainer: Any) -> bool:
    return bool(trainer._entropy_bonus_enabled)


def batch_environments(trainer: Any) -> list:
    return trainer._batch_environments


def environment_tools(trainer: Any) -> dict:
    return trainer._env_tools


def sync_tools(trainer: Any) -> list:
    return trainer._sync_tool_dicts


def async_tools(trainer: Any) -> list:
    return trainer._async_tool_dicts


def tool_suffix_ids(trainer: Any, tool_messages: list) -> list:
    return trainer._get_tool_suffix_ids(tool_messages)


def load_weights_from_checkpoint(trainer: Any, checkpoint: str) -> None:
    trainer._load_from_checkpoint(checkpoint)
