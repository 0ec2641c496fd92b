"""A judge's verdict read from its next-token distribution: P(correct words) against P(wrong).

The reply is not generated: one forward pass over the judging prompt gives the distribution
of the reply's first token, and the judgement is whichever word list holds more of it (each
word's first token, as written and capitalised). A model too small to follow the one-word
format still has a preference between the two lists, so the analysis measures something on
every model; a model that reasons before its verdict (a thinking template) is read better
from its generated reply (``analyze.judge.scoring=reply``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rlvr.config import ConfigError


def first_token_ids(tokenizer, words: Sequence[str]) -> set[int]:
    ids = set()
    for word in words:
        for variant in {word, word.capitalize(), word.upper()}:
            encoded = tokenizer.encode(variant, add_special_tokens=False)
            if encoded:
                ids.add(encoded[0])
    return ids


def verdict_tokens(tokenizer, correct: Sequence[str], wrong: Sequence[str]):
    """(correct ids, wrong ids) with first tokens the two lists share left out of both."""
    right, bad = first_token_ids(tokenizer, correct), first_token_ids(tokenizer, wrong)
    shared = right & bad
    right, bad = right - shared, bad - shared
    if not right or not bad:
        raise ConfigError(
            "analyze.judge: correct_words and wrong_words start with the same tokens for this "
            "tokenizer; choose words whose first tokens differ, or analyze.judge.scoring=reply"
        )
    return sorted(right), sorted(bad)


def verdict_log_odds(
    model, tokenizer, prompt_ids: Sequence[Sequence[int]], right, wrong, batch_size: int
) -> list[float]:
    """log P(first token in ``right``) - log P(first token in ``wrong``), per prompt."""
    import torch

    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out: list[float] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(prompt_ids), batch_size):
            batch = prompt_ids[start : start + batch_size]
            width = max(len(ids) for ids in batch)
            # left padding: every prompt's last token sits in the last column
            tokens = torch.tensor([[pad] * (width - len(i)) + list(i) for i in batch])
            mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in batch])
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = (
                model(
                    input_ids=tokens.to(device),
                    attention_mask=mask.to(device),
                    position_ids=positions.to(device),
                )
                .logits[:, -1, :]
                .float()
            )
            logp = torch.log_softmax(logits, dim=-1)
            odds = logp[:, right].logsumexp(-1) - logp[:, wrong].logsumexp(-1)
            out.extend(odds.tolist())
    return out
