"""Each contract of the TRL seam (rlvr/training/trl_seam.py) against the installed TRL: a TRL
upgrade that moves a private member fails the one test named after it, saying what to re-check."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from transformers import PreTrainedModel, Trainer
from trl import DistillationTrainer, GRPOTrainer

from rlvr.distillation.trainer import RoutedDistillationTrainer
from rlvr.training.grpo import RLVRGRPOTrainer
from rlvr.training.trl_seam import CONTRACTS, Contract

REPO = Path(__file__).resolve().parents[1]
OWNERS = {
    "GRPOTrainer": GRPOTrainer,
    "DistillationTrainer": DistillationTrainer,
    "Trainer": Trainer,
    "PreTrainedModel": PreTrainedModel,
}
OURS = {GRPOTrainer: RLVRGRPOTrainer, DistillationTrainer: RoutedDistillationTrainer}


def _owner(c: Contract) -> type:
    return OWNERS[c.owner]


@pytest.mark.parametrize("c", CONTRACTS, ids=[f"{c.owner}.{c.member}" for c in CONTRACTS])
def test_trl_still_has_what_the_seam_assumes(c: Contract):
    owner = _owner(c)
    reason = f"{c.owner}.{c.member} ({c.kind}): TRL {c.trl_does}; we {c.we_change}, because {c.why}"
    if c.kind == "attribute":
        source = "".join(
            inspect.getsource(k) for k in owner.__mro__ if k.__module__.startswith(("trl", "transformers"))
        )
        assigned = re.search(rf"self\.{re.escape(c.member)}\s*(:[^=]+)?=", source) or isinstance(
            getattr(owner, c.member, None), property
        )
        assert assigned, f"TRL no longer sets {c.member}: {reason}"
        return
    method = getattr(owner, c.member, None)
    assert callable(method), f"TRL no longer has {c.member}: {reason}"
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    assert params[: len(c.params)] == list(c.params), f"signature moved to {params}: {reason}"
    if c.kind == "override":  # our override takes TRL's parameters, in TRL's order
        ours = getattr(OURS.get(owner, RLVRGRPOTrainer), c.member)
        assert ours is not method, f"{c.member} is no longer overridden though the seam says so"
        named = [
            name
            for name, p in inspect.signature(ours).parameters.items()
            if name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        assert named == params[: len(named)], f"our override takes {named}, TRL {params}: {reason}"


def _private_overrides(cls: type, base: type) -> set[str]:
    """Methods ``cls`` defines that a TRL/transformers class it derives from also defines."""
    trl_names = {n for k in base.__mro__ if k.__module__.startswith(("trl", "transformers")) for n in vars(k)}
    return {n for n in vars(cls) if callable(getattr(cls, n)) and n in trl_names and n != "__init__"}


@pytest.mark.parametrize(
    ("ours", "base"), [(RLVRGRPOTrainer, GRPOTrainer), (RoutedDistillationTrainer, DistillationTrainer)]
)
def test_every_override_of_a_trl_trainer_has_a_contract(ours, base):
    listed = {c.member for c in CONTRACTS if c.kind == "override" and OURS.get(_owner(c), RLVRGRPOTrainer) is ours}
    public = {"train", "compute_loss"}  # public methods: their signatures are TRL's API, not a seam
    missing = _private_overrides(ours, base) - listed - public
    assert not missing, f"overrides without a contract in rlvr/training/trl_seam.py: {sorted(missing)}"


def _private_reads(path: Path) -> set[str]:
    """``trainer._x`` reads in a module (its own ``self._x`` are its own)."""
    tree = ast.parse(path.read_text())
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and isinstance(node.value, ast.Name)
        and node.value.id == "trainer"
    }


def test_outside_the_seam_nothing_reads_trl_private_state():
    seam = {REPO / "rlvr" / "training" / "trl_seam.py"}
    found = {
        str(p.relative_to(REPO)): r
        for p in (REPO / "rlvr").rglob("*.py")
        if p not in seam and (r := _private_reads(p))
    }
    assert not found, f"read TRL's private state through rlvr.training.trl_seam instead: {found}"
