"""The one-screen summary an entry point prints at the end of a run."""

from __future__ import annotations

from typing import Any


def _fmt(value: Any) -> str:
    return f"{value:6.3f}" if isinstance(value, float) else f"{value!s:>6}"


def format_summary(summary: dict[str, Any]) -> str:
    lines = [
        f"run        {summary['experiment']}/{summary['run_name']}",
        f"outputs    {summary['run_dir']}",
        f"model      {summary['model']}   domains {', '.join(summary['domains'])}",
        "",
        "held-out   model     domain        avg@k  pass@k  greedy  prompts",
    ]
    for stage, per_domain in summary["heldout"].items():
        for domain, m in sorted(per_domain.items()):
            lines.append(
                f"           {stage:<9} {domain:<12} {_fmt(m['avg_at_k'])}  {_fmt(m['pass_at_k'])}"
                f"  {_fmt(m.get('greedy_accuracy', float('nan')))}  {m['prompts']:>6} (k={m['k']})"
            )
    rl = summary["rl"]
    lines += [
        "",
        f"RL         {rl['steps']} steps in {rl['seconds']:.1f} s "
        f"(generation {rl['generation_s']:.1f} s, reward {rl['reward_s']:.1f} s"
        + (f", teacher {rl['teacher_s']:.1f} s)" if "teacher_s" in rl else ")"),
        f"SFT        {summary['sft_seconds']:.1f} s",
        f"total      {summary['total_seconds']:.1f} s on {summary['compute']['processes']} process(es)"
        f" = {summary['compute']['device_seconds']:.1f} device-seconds",
        f"files      config.yaml, metrics.jsonl, summary.json, final/ in {summary['run_dir']}",
    ]
    return "\n".join(lines)
