"""No verifier goes unfuzzed: every registered name is declared by some fuzz module.

Each ``test_fuzz*.py`` beside this file declares the verifier names it fuzzes in a
module-level ``FUZZED`` tuple; registering a verifier without adding it to one fails here.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

FUZZ_MODULES = sorted(path.stem for path in Path(__file__).parent.glob("test_fuzz*.py"))


@cache
def known_verifiers() -> list[str]:
    """The product's verifiers, read in a fresh interpreter: test doubles that other tests
    register in this process (e.g. the pool's killed-once verifier) are not product verifiers."""
    code = (
        "import json, tasks.environments, verifiers; "  # environments register ``workplace``
        "print(json.dumps(verifiers.known_verifiers()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def declared() -> dict[str, list[str]]:
    """Verifier name -> the fuzz modules that declare it."""
    names: dict[str, list[str]] = {}
    for module in FUZZ_MODULES:
        if module == Path(__file__).stem:
            continue
        fuzzed = importlib.import_module(module).FUZZED  # a module without it fails here
        assert isinstance(fuzzed, tuple) and fuzzed, f"{module}.FUZZED must name verifiers"
        for name in fuzzed:
            names.setdefault(name, []).append(module)
    return names


def test_every_registered_verifier_has_a_fuzz_module():
    registered = set(known_verifiers())
    assert "workplace" in registered  # the environments package registered its replay
    missing = sorted(registered - set(declared()))
    assert not missing, f"verifiers without a fuzz module (declare them in FUZZED): {missing}"


def test_fuzz_modules_name_only_registered_verifiers():
    unknown = {name: modules for name, modules in declared().items() if name not in known_verifiers()}
    assert not unknown, f"FUZZED names no registered verifier: {unknown}"
