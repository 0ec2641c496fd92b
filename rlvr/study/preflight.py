"""Checks before a study queues: vLLM engines and servers, and what the Hub cache lacks.

Each training stage's colocated engine (its share of the device and KV capacity), the vLLM
servers stages need, and the Hub models and datasets missing for offline compute nodes.
Printed by the dry run; a colocated engine that cannot share its device, or a vLLM server the
study does not start and no setting names, stops the study here with the command to start it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from rlvr.config import ConfigError, RunConfig
from rlvr.planning import StagePlan, vllm
from rlvr.study import offline
from rlvr.study.commands import accelerate_layout, stage_config, user_overrides
from rlvr.study.plan import Stage


def _engine_line(run: RunConfig, p: StagePlan) -> str | None:
    training = p.kind in offline.TRAINING and p.kind != "sft"
    if not (training and vllm.colocated(run) and p.workload and p.shape and p.device_bytes):
        return None
    w = p.workload
    plan = vllm.engine_plan(run, p.shape, p.parts, p.device_bytes, w.generation_rows, w.sequence)
    return f"{p.stage}: {plan.describe()}"


def _policy_server(run: RunConfig, stage: Stage, processes: int, machines: int) -> list[str]:
    """Why a GRPO stage's vLLM server (``trainer.vllm_mode=server``) cannot serve it."""
    t = run.trainer
    problems = []
    rows = run.algo.prompts_per_step * run.algo.num_generations
    if machines == 1 and (why := vllm.server_split(rows, processes, t.vllm_server_devices)):
        problems.append(f"stage {stage.name}: {why}")
    if not t.vllm_server_base_url:
        gpus = ",".join(str(g) for g in range(processes - t.vllm_server_devices, processes))
        model = run.init_from or run.model.name
        command = vllm.serve_command(model, vllm.SERVER_PORT, gpus, t.vllm_server_devices)
        problems.append(
            f"stage {stage.name}: trainer.vllm_mode=server and the study starts no server; "
            f"start one before the stage (on its node) and set "
            f"trainer.vllm_server_base_url=http://<node>:{vllm.SERVER_PORT}:\n    {command}"
        )
    return problems


def _teacher_servers(run: RunConfig, stage: Stage) -> list[str]:
    """MT-OPD with ``distill.teacher_device=server`` needs one server per domain's expert;
    the study starts none, so each missing one is refused with the command that starts it."""
    d = run.distill
    if d.teacher_device != "server":
        return []
    domains = sorted(run.domains)
    absent = [name for name in domains if not d.teacher_servers.get(name)]
    if not absent:
        return []
    lines = []
    for gpu, name in enumerate(domains):
        if name in absent:
            port = vllm.TEACHER_PORT + gpu
            model = d.teachers.get(name, f"<{name} expert>/final")
            lines.append(f"    {vllm.serve_command(model, port, str(gpu))}")
            lines.append(f"      then distill.teacher_servers.{name}=http://<node>:{port}")
    return [
        f"stage {stage.name}: distill.teacher_device=server and the study starts no teacher "
        f"servers; start one per domain after its expert finishes (on a node beside the "
        f"training one) and name it:\n" + "\n".join(lines)
    ]


def _server_problems(stages: Sequence[Stage], configs: dict[str, RunConfig], run: RunConfig):
    layout = accelerate_layout(run.study.accelerate)
    problems = []
    for s in stages:
        c = configs[s.name]
        if s.kind == "distill":
            problems += _teacher_servers(c, s)
        elif s.kind in offline.TRAINING and s.kind != "sft":
            if c.trainer.use_vllm and c.trainer.vllm_mode == "server":
                problems += _policy_server(c, s, layout.processes, layout.machines)
    return problems


def preflight(
    run: RunConfig,
    argv: Sequence[str],
    stages: Sequence[Stage],
    resources: Sequence[StagePlan],
    out: TextIO | None,
) -> None:
    """Print (``out``) each colocated engine's share and KV capacity and what the Hub cache
    lacks; raise when an engine cannot share its device or a needed server is not set up.
    ``run``: the study's config; ``argv``: the study command's arguments."""
    base = user_overrides(argv)
    configs = {s.name: stage_config(base, s) for s in stages}
    lines, problems = [], []
    for p in resources:
        try:
            if line := _engine_line(configs[p.stage], p):
                lines.append(line)
        except ConfigError as err:
            problems.append(f"stage {p.stage}: {err}")
    problems += _server_problems(stages, configs, run)
    items = offline.hub_items((s.kind, configs[s.name]) for s in stages)
    lines += offline.missing_lines(offline.missing(items), argv)
    if out is not None and lines:
        out.write("vllm and hub cache\n" + "".join(f"  {line}\n" for line in lines))
    if problems:
        raise ConfigError("\n".join(problems))
