"""What a model sees and where it stops: one rendering of a row's prompt and one set of stop ids.

Training (TRL's GRPO and SFT), evaluation (transformers and vLLM), tool episodes, MT-OPD and
the analyses all render prompts and pick stop tokens here, so what is evaluated is what was
trained: the same chat template options (``model.chat_template_kwargs``, e.g.
``enable_thinking``) and the same end tokens TRL stops at.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


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
            [dict(m) for m in messages],
            tokenize=True,
            return_dict=False,
            **{**self.template_kwargs, **kwargs},
        )
        return list(out)


def stop_token_ids(tokenizer: Any, generation_config: Any = None) -> tuple[int, ...]:
    """The ids generation ends at: TRL's GRPO trainer's (the generation config's end tokens,
    with the tokenizer's end token first when they lack it), then the token the chat template
    ends an assistant turn with where it is neither (a base model's tokenizer ends at
    ``<|endoftext|>`` while its ChatML turns end at ``<|im_end|>``)."""
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
    turn_end = turn_end_token_id(tokenizer)
    if turn_end is not None and turn_end not in ids:
        ids.append(turn_end)
    if not ids:
        raise ValueError(
            "the tokenizer has no end token and the generation config names none; "
            "set eos_token in the tokenizer or eos_token_id in generation_config.json"
        )
    return tuple(ids)


def pad_token_id(tokenizer: Any, stops: Sequence[int]) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]


# A conversation whose assistant turn the template closes; the probe text is what precedes it.
_PROBE = "Turn end probe 7."
_TURN_ENDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def turn_end_token_id(tokenizer: Any) -> int | None:
    """The special token the chat template closes an assistant turn with, read from a rendered
    conversation (None: no template, or the turn ends in plain text). Cached per tokenizer and
    template."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return None
    key = (str(template), len(tokenizer))
    cached = _TURN_ENDS.get(tokenizer)
    if cached is not None and cached[0] == key:
        return cached[1]
    found = _read_turn_end(tokenizer)
    _TURN_ENDS[tokenizer] = (key, found)
    return found


def _read_turn_end(tokenizer: Any) -> int | None:
    chat = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": _PROBE}]
    try:
        text = tokenizer.apply_chat_template(chat, tokenize=False)
    except Exception as exc:  # a template that cannot render this chat names no turn end
        log.debug("no turn end read from the chat template: %s", exc)
        return None
    at = text.rfind(_PROBE)
    if at < 0:
        return None
    rest = text[at + len(_PROBE) :]
    specials = {t.content: i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    matches = [content for content in specials if content and rest.startswith(content)]
    return specials[max(matches, key=len)] if matches else None
