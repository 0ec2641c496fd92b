"""IFEval's loose-mode response variants: drop the first/last line, drop ``*`` markup."""

from __future__ import annotations


def response_variants(response: str) -> list[str]:
    """The eight texts loose mode tries; an instruction passes if any variant follows it.

    Dropping an opening or closing line forgives preambles ("Sure, here it is:") and
    sign-offs; removing ``*`` forgives markdown emphasis around otherwise valid text.
    """
    lines = response.split("\n")
    without_first = "\n".join(lines[1:]).strip()
    without_last = "\n".join(lines[:-1]).strip()
    without_both = "\n".join(lines[1:-1]).strip()
    trimmed = [response, without_first, without_last, without_both]
    return trimmed + [text.replace("*", "") for text in trimmed]
