"""Completion log-probs with each distinct prompt encoded once and its KV cache shared.

GRPO samples ``num_generations`` completions of every prompt, and TRL's forward encodes the
prompt again for each of them: for agent rows, whose tool-listing prompt is about as long as the
episode, that is half the update's tokens. Here the distinct prompts, all but their last token,
run once with a KV cache; the cache is indexed out to the rows that repeat each prompt, and each
row's last prompt token and completion run on top of it through TRL's fused LM head. Gradients
flow back through the indexing into the one prompt forward, so the loss and its gradient are
the padded forward's. Needs the cache in training, so not with gradient checkpointing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import torch


def shared_prompt_logps(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool,
    autocast: Callable[[], AbstractContextManager],
    groups: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, None] | None:
    """Per-token log-probs (and entropies) of the last ``logits_to_keep`` columns, as TRL's
    ``_get_per_token_logps_and_entropies`` returns them; None when the rows share too few
    prompts to gain (fewer than two rows a prompt), a prompt is a single token, or the model
    returns no cache. ``groups``: a prompt id per row (rows with equal ids have equal prompt
    columns), when the caller has already grouped the batch; found here when None."""
    prompt_width = input_ids.size(1) - logits_to_keep
    if prompt_width < 2:
        return None
    prompts = torch.cat([input_ids[:, :prompt_width], attention_mask[:, :prompt_width]], dim=1)
    distinct, row_prompt = _distinct_prompts(prompts, groups)
    prefix_ids = distinct[:, : prompt_width - 1]
    prefix_mask = distinct[:, prompt_width : 2 * prompt_width - 1]
    if 2 * distinct.size(0) > input_ids.size(0) or not prefix_mask.any(dim=1).all():
        return None
    with autocast():
        prefix = model(input_ids=prefix_ids, attention_mask=prefix_mask, use_cache=True, logits_to_keep=1)
    cache = getattr(prefix, "cache", None)  # ``past_key_values`` before transformers 5.x's rename
    if cache is None:
        return None
    cache.reorder_cache(row_prompt)  # index_select per layer: gradients sum back per prompt
    suffix = input_ids[:, prompt_width - 1 :]
    labels = suffix.masked_fill(attention_mask[:, prompt_width - 1 :] == 0, -100)
    labels[:, 0] = -100  # the last prompt token: it only predicts the first completion token
    with autocast():
        out = model(
            input_ids=suffix,
            attention_mask=attention_mask,
            cache=cache,
            labels=labels,
            fused_lm_head=True,
        )
    entropies = out.entropy[:, -logits_to_keep:] if compute_entropy else None
    return out.log_probs[:, -logits_to_keep:], entropies, None


def _distinct_prompts(prompts: torch.Tensor, groups: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct prompt rows and each row's index into them: from the caller's group ids
    (one small 1-D sort) when given, else by comparing the prompt columns themselves."""
    if groups is None:
        return torch.unique(prompts, dim=0, return_inverse=True)
    ids, row_prompt = torch.unique(groups, return_inverse=True)
    rows = torch.arange(len(groups), device=groups.device)
    first = rows.new_full((len(ids),), len(groups)).scatter_reduce(0, row_prompt, rows, reduce="amin")
    return prompts[first], row_prompt
