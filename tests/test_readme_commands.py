"""Every ``python -m rlvr.<verb>`` command the README and the docs pages show parses and
composes as typed.

Commands are taken from code blocks and inline code, split as a shell splits them (quotes
kept where the README has them), placeholders filled (``<domain>`` with a domain, ``<study>``
with a folder) and a standalone ``...`` dropped; then Hydra parses every override and the config composes. An
unquoted list holding ``=`` (``eval.models=[a=b]``) fails Hydra's parser here as it would in
a user's shell.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser

from rlvr.config import register_configs

try:
    from rlvr.runs.cli import CONF_DIR, check_group_choices, register_resolvers
except ImportError:  # before the entry points' plumbing moved into rlvr.runs
    from rlvr.cli import CONF_DIR, check_group_choices, register_resolvers

REPO = Path(__file__).resolve().parents[1]
_COMMAND = re.compile(r"python -m rlvr\.([\w.]+)((?:[^`#\n]|\\\n)*)")
_PLACEHOLDER = re.compile(r"<([A-Za-z_]+)>")
# placeholders that stand for a name rather than a folder get a real one of that kind
_NAMED = {
    "domain": "math",
    "domains": "math,code",
    "s": "0",
    "method": "ties",
    "model": "m",
    "benchmarks": "micro_math",
    "label": "m",
}


def documentation() -> list[Path]:
    """README.md and every page under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _without_config_reference(text: str) -> str:
    """docs/configuration.md's generated reference quotes config headers, whose prose names
    commands in passing ("run python -m rlvr.study experiment=tiny_study first)")."""
    begin, end = "<!-- config:begin -->", "<!-- config:end -->"
    if begin not in text:
        return text
    head, rest = text.split(begin, 1)
    return head + rest.split(end, 1)[-1]


def readme_commands() -> list[tuple[str, str]]:
    found = []
    for page in documentation():
        text = _without_config_reference(page.read_text()).replace("\\\n", " ")
        for verb, rest in _COMMAND.findall(text):
            rest = rest.split(":", 1)[0] if rest.lstrip().startswith(":") else rest
            found.append((verb, rest.strip()))
    return sorted(set(found))


COMMANDS = readme_commands()


def test_the_readme_shows_commands_to_check():
    verbs = {verb for verb, _ in COMMANDS}
    assert {"study", "train", "evaluate", "analyze", "distill"} <= verbs, verbs


@pytest.fixture(scope="module")
def hydra_context():
    register_configs()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        yield


@pytest.mark.parametrize(("verb", "args"), COMMANDS, ids=[f"{v} {a}"[:80] for v, a in COMMANDS])
def test_readme_command_parses_and_composes(verb, args, hydra_context, tmp_path):
    filled = _PLACEHOLDER.sub(lambda m: _NAMED.get(m.group(1), str(tmp_path)), args)
    argv = [a for a in shlex.split(filled) if a not in {"-m", "--multirun", "..."}]
    overrides = [a for a in argv if "=" in a]
    assert len(overrides) == len(argv), f"not an override in {argv}"
    parsed = OverridesParser.create().parse_overrides(overrides)  # raises on a shell's mistakes
    if {"-m", "--multirun"} & set(shlex.split(filled)):  # a sweep: compose its first point
        overrides = [_first_point(o, text) for o, text in zip(parsed, overrides, strict=True)]
    check_group_choices(overrides)
    compose("train", overrides=overrides, return_hydra_config=True)


def _first_point(override, text: str) -> str:
    if not override.is_sweep_override():
        return text
    return f"{override.get_key_element()}={next(override.sweep_string_iterator())}"
