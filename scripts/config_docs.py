"""Write docs/configuration.md's reference part from the config tree and the schema: every config
group with its default, every choice with the first sentence of its file's header, and the keys
the group's schema takes (rlvr/config/schemas.py).

python scripts/config_docs.py            # print the reference
python scripts/config_docs.py --check    # exit 1 if docs/configuration.md's copy is out of date
python scripts/config_docs.py --write    # rewrite it
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rlvr.config.schemas import DomainConfig, RunConfig  # noqa: E402
from rlvr.runs.cli import CONF_DIR  # noqa: E402

CONF = Path(CONF_DIR)
PAGE = REPO / "docs" / "configuration.md"
BEGIN, END = "<!-- config:begin -->", "<!-- config:end -->"

# What each group sets, in the order a reader meets them; a group folder missing here fails --check.
GROUPS = {
    "model": "The model: Hub id or folder, dtype, attention, chat format and stop tokens",
    "domains": "Which domains train (multi-select) and, per domain, its tasks, verifier options and weight",
    "mixture": "How the domains' rows mix into training batches",
    "algo": "The GRPO-family loss and its hyper-parameters",
    "sft": "The SFT stage, and the warm start inside `rlvr.train`",
    "distill": "Multi-teacher on-policy distillation (MT-OPD)",
    "trainer": "Steps, batch, checkpoints, precision, vLLM, memory margins, error budget",
    "peft": "Full fine-tuning or LoRA",
    "eval": "Evaluation: benchmarks, decoding, Avg@k / pass@k",
    "merge": "The mergekit method and its settings",
    "analyze": "The paper's analyses of a study's models",
    "filter": "Difficulty filtering of training rows by pass rate",
    "logger": "Tracking (W&B)",
    "paths": "Where outputs, caches and the shared data live",
    "sandbox": "Isolation backend for untrusted code",
    "study": "The study's plan: arms, seeds, merges, benchmarks, launcher, SLURM",
    "experiment": "An experiment's deltas over the defaults (each file starts with its command)",
}
# Folders of config files that are not Hydra groups of the root config.
NOT_GROUPS = {
    "accelerate": "`accelerate launch --config_file conf/accelerate/<name>.yaml` (or `study.accelerate=<name>`)",
    "hydra": "Hydra's own settings: `hydra/launcher=submitit_slurm` runs a sweep's points as SLURM jobs",
}
_COMMAND = re.compile(r"^(python|make|bash|accelerate|pre-commit|rlvr-)")


def purpose(path: Path) -> str:
    """The first sentence of the file's header comment (its command lines left out)."""
    words = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith("@package") or _COMMAND.match(text):
            continue
        words.append(text)
    paragraph = " ".join(w for w in words if w)
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z(`])", paragraph, maxsplit=1)[0]
    return sentence if len(sentence) <= 200 else sentence[:197].rstrip() + "..."


def defaults() -> dict[str, str]:
    chosen: dict[str, str] = {}
    for entry in yaml.safe_load((CONF / "train.yaml").read_text())["defaults"]:
        if isinstance(entry, dict):
            (group, choice), *_ = entry.items()
            chosen[group] = "[" + ", ".join(choice) + "]" if isinstance(choice, list) else str(choice or "none")
    return chosen


def schema_keys(group: str) -> list[str]:
    hints = typing.get_type_hints(RunConfig)
    kind = DomainConfig if group == "domains" else hints.get(group)
    if not dataclasses.is_dataclass(kind):
        return []
    return [f.name for f in dataclasses.fields(kind)]


def choices(folder: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(folder).with_suffix("").as_posix(), purpose(p)) for p in sorted(folder.rglob("*.yaml"))]


def reference() -> str:
    folders = sorted(p.name for p in CONF.iterdir() if p.is_dir())
    unknown = [f for f in folders if f not in GROUPS and f not in NOT_GROUPS]
    if unknown:
        raise SystemExit(f"config folders without a line in scripts/config_docs.py GROUPS: {unknown}")
    chosen = defaults()
    out = ["## Groups", ""]
    for group, what in GROUPS.items():
        default = chosen.get(group, "none")
        out += [f"### `{group}` (default: `{default}`)", "", what + ".", ""]
        keys = schema_keys(group)
        if keys:
            where = "`domains.<name>.<key>`" if group == "domains" else f"`{group}.<key>`"
            out += [f"Keys ({where}): " + ", ".join(f"`{k}`" for k in keys) + ".", ""]
        out += ["| choice | what it is |", "|---|---|"]
        out += [f"| `{name}` | {text or '(no header)'} |" for name, text in choices(CONF / group)]
        out.append("")
    out += ["## Other config files", ""]
    for folder, what in NOT_GROUPS.items():
        out += [f"### `conf/{folder}/`", "", what + ".", "", "| file | what it is |", "|---|---|"]
        out += [f"| `{name}` | {text or '(no header)'} |" for name, text in choices(CONF / folder)]
        out.append("")
    return "\n".join(out).rstrip()


def main() -> int:
    text = PAGE.read_text()
    if BEGIN not in text:
        raise SystemExit(f"{PAGE} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    current = rest.split(END, 1)[0].strip()
    fresh = reference()
    if "--write" in sys.argv:
        PAGE.write_text(f"{head}{BEGIN}\n{fresh}\n{END}{rest.split(END, 1)[1]}")
        return 0
    if "--check" in sys.argv:
        if current != fresh:
            print(f"{PAGE.name} is out of date: run python scripts/config_docs.py --write")
            return 1
        return 0
    print(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
