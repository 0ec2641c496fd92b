"""The report's recipe section: the study's fidelity table, when its plan follows a paper's recipe."""

from __future__ import annotations

from pathlib import Path

# written into the study folder by ``python -m rlvr.study`` (rlvr.study.fidelity)
FIDELITY_FILE = "fidelity.md"


def recipe_section(study: Path) -> list[str]:
    """The section's Markdown, or nothing when the study had no recipe (``study.recipe``)."""
    path = study / FIDELITY_FILE
    if not path.is_file():
        return []
    intro = (
        "Every setting of the paper's recipe (`study.recipe`) beside this study's, read from "
        "the configs of the stages it launched, with the reason where they differ "
        "(`study.deviations`)."
    )
    return ["## Fidelity to the paper's recipe", "", intro, "", path.read_text()]
