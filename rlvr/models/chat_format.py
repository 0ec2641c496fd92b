"""What a model sees and where it stops: one rendering of a row's prompt and one set of stop ids.

Training (TRL's GRPO and SFT), evaluation (transformers and vLLM), tool episodes, MT-OPD and
the analyses all render prompts and pick stop tokens here, so what is evaluated is what was
trained: the same chat template options (``model.chat_template_kwargs``, e.g.
``enable_thinking``) and the same end tokens TRL stops at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatFormat:
    """The chat template options every rendering of a prompt uses."""

    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, model_config: Any) -> ChatFormat:
        """From a ``ModelConfig`` (its ``chat_template_kwargs``)."""
        return cls(dict(getattr(model_config, "chat_template_kwargs", None) or {}))

    def text(self, tokenizer: Any, messages: Sequence[Mapping], tools: Any = None) -> str:
        """The prompt string, ending with the assistant header the model continues from."""
        return tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tools=tools or None,
            tokenize=False,
            add_generation_prompt=True,
            **self.template_kwargs,
        )

    def texts(self, tokenizer: Any, prompts: Sequence[Sequence[Mapping]]) -> list[str]:
        return [self.text(tokenizer, p) for p in prompts]

    def ids(self, tokenizer: Any, messages: Sequence[Mapping], tools: Any = None) -> list[int]:
        """The prompt's token ids, tokenized by the template as TRL tokenizes them."""
        out = tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tools=tools or None,
            tokenize=True,
            add_generation_prompt=True,
            return_dict=False,
            **self.template_kwargs,
        )
        return list(out)

    def conversation_ids(self, tokenizer: Any, messages: Sequence[Mapping], **kwargs: Any) -> list:
        """A whole conversation's ids (no generation prompt unless asked), same options."""
        out = tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=True, return_dict=False,
            **{**self.template_kwargs, **kwargs},
        )  # fmt: skip
        return list(out)


def stop_token_ids(tokenizer: Any, generation_config: Any = None) -> tuple[int, ...]:
    """The ids generation ends at, as TRL's GRPO trainer computes them: the generation
    config's end tokens, with the tokenizer's end token first when they lack it."""
    declared = getattr(generation_config, "eos_token_id", None)
    if declared is None:
        ids: list[int] = []
    elif isinstance(declared, int):
        ids = [declared]
    else:
        ids = list(declared)
    eos = tokenizer.eos_token_id
    if eos is not None and eos not in ids:
        ids = [eos, *ids]
    if not ids:
        raise ValueError(
            "the tokenizer has no end token and the generation config names none; "
            "set eos_token in the tokenizer or eos_token_id in generation_config.json"
        )
    return tuple(ids)


def pad_token_id(tokenizer: Any, stops: Sequence[int]) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
