"""The study on a real pretrained model, reduced: SmolLM2-135M-Instruct through SFT, a LoRA
expert and an agent expert on live tool episodes, a TIES merge, every evaluation and the report.
The mixed arm (the experts' code on more domains), the other merge presets, MT-OPD and the
analyses run in ``experiment=real_smoke_study`` (``make real-smoke``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# about 6 minutes alone on 2 cores (11 stage processes on a 135M model), far more on shared ones
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[1]
REDUCED = [
    "experiment=real_smoke_study",
    "study.domains=[math,agent]",
    "study.merges=[ties]",
    "study.evaluate_base=false",
    "study.stages=[]",
    'study.arm_overrides.math=["peft=lora"]',
    "study.mixed=false",
    "study.poll_s=0.2",
]


@pytest.fixture(scope="module")
def study(smollm2_dir, rlvr_cache, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real-study") / "study"
    cmd = [sys.executable, "-m", "rlvr.study", *REDUCED, f"study.out_dir={out}", f"paths.cache_dir={rlvr_cache}"]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out


def test_every_stage_ran_on_the_real_model(study: Path, smollm2_dir: Path) -> None:
    stages = json.loads((study / "study.json").read_text())["stages"]
    assert {e["status"] for e in stages.values()} == {"done"}
    assert {"sft", "expert-math-seed0", "expert-agent-seed0", "merge-ties-seed0", "report"} <= set(stages)
    source = json.loads((smollm2_dir / "config.json").read_text())
    template = json.loads((smollm2_dir / "tokenizer_config.json").read_text()).get("chat_template")
    template = template or (smollm2_dir / "chat_template.jinja").read_text()
    for folder in (
        study / "sft" / "final",
        study / "experts" / "math-seed0" / "final",
        study / "merges" / "ties-seed0",
    ):
        config = json.loads((folder / "config.json").read_text())
        assert config["num_key_value_heads"] == source["num_key_value_heads"] == 3
        assert config["vocab_size"] == 49152 and config["tie_word_embeddings"]
        assert not (folder / "adapter_config.json").exists()  # LoRA merged into full weights
        saved = (folder / "chat_template.jinja").read_text()
        assert saved == template, f"{folder} lost the model's chat template"


def test_evaluations_scored_every_model_on_both_domains(study: Path) -> None:
    labels = ["sft", "math-seed0", "agent-seed0", "ties-seed0"]
    for label in labels:
        for bench in ("micro_math", "micro_agent"):
            summary = json.loads((study / "eval" / label / f"{bench}.json").read_text())
            assert summary["prompts"] == 2
            assert "error" not in summary["status_counts"], (label, bench, summary)
    agent = (study / "eval" / "agent-seed0" / "micro_agent.jsonl").read_text().splitlines()
    assert len(agent) == 2 and {json.loads(r)["mode"] for r in agent} == {"greedy"}
    table = (study / "report" / "main_table.csv").read_text()
    assert all(label.split("-")[0] in table for label in labels)
