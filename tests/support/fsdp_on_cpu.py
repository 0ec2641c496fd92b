"""Run a module under accelerate's FSDP path on CPU processes (gloo), for the GPU-config tests.

``python -m tests.support.fsdp_on_cpu <module> [args...]`` (as the script of ``accelerate
launch``) runs ``<module>`` as ``__main__`` after one change to accelerate: its state picks
FSDP only for accelerator devices (``AcceleratorState`` keeps ``MULTI_CPU`` when there is no
GPU), although torch's FSDP2 shards over a CPU device mesh and gloo. With
``ACCELERATE_USE_FSDP=true`` in the environment (``accelerate launch`` sets it from a config's
``distributed_type: FSDP``) a ``MULTI_CPU`` state is switched to ``FSDP`` with the launcher's
plugin, exactly as accelerate does for a GPU. Everything after that (``fully_shard``, mixed
precision, activation checkpointing, state-dict gathering, checkpoint saving) is the real code.
"""

from __future__ import annotations

import os
import runpy
import sys

from accelerate import state as accelerate_state
from accelerate.utils import DistributedType

_init = accelerate_state.AcceleratorState.__init__


def _init_with_cpu_fsdp(self, *args, fsdp_plugin=None, **kwargs) -> None:
    _init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
    wants_fsdp = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    if fsdp_plugin is None or not wants_fsdp:
        return
    if self.distributed_type != DistributedType.MULTI_CPU:
        return
    self.distributed_type = DistributedType.FSDP
    if self._mixed_precision != "no":
        fsdp_plugin.set_mixed_precision(self._mixed_precision)
    self.fsdp_plugin = fsdp_plugin
    accelerate_state.PartialState._shared_state["distributed_type"] = self.distributed_type


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m tests.support.fsdp_on_cpu <module> [args...]")
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    accelerate_state.AcceleratorState.__init__ = _init_with_cpu_fsdp
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
