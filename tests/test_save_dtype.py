"""Final models and merges are written in the dtype training ran in, unless a setting names one."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

from rlvr.config import ConfigError, RunConfig, validate
from rlvr.merge import MERGE_INFO, merge_models
from rlvr.models.tiny import TinyModelSpec, ensure_tiny_model
from rlvr.study.commands import compose
from rlvr.training.saving import save_full_model

SPEC = TinyModelSpec(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    max_position_embeddings=128,
)
HEADER_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny matmuls on a shared 2-core box: extra OpenMP threads only spin."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return ensure_tiny_model(tmp_path_factory.mktemp("cache"), SPEC)


def saved_dtypes(folder: Path) -> set[str]:
    """The dtypes the safetensors headers of ``folder`` declare (read from the files' bytes)."""
    found = set()
    for file in folder.glob("*.safetensors"):
        with file.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        found |= {HEADER_DTYPES[v["dtype"]] for k, v in header.items() if k != "__metadata__"}
    return found


def recorded_dtype(folder: Path) -> str:
    return json.loads((folder / "config.json").read_text())["dtype"]


def trained(model_dir: Path, out: Path, bf16: bool) -> Trainer:
    """One real optimiser step of transformers' Trainer on CPU (bf16: CPU autocast)."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = AutoTokenizer.from_pretrained(model_dir)("Answer: 7\n").input_ids
    rows = [{"input_ids": ids, "labels": ids} for _ in range(4)]
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"),
        use_cpu=True,
        bf16=bf16,
        max_steps=1,
        per_device_train_batch_size=2,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    trainer.train()
    return trainer


@pytest.mark.parametrize(
    ("bf16", "setting", "expected"),
    [
        (True, "auto", "bfloat16"),  # trained under bf16: final weights in bf16
        (False, "auto", "float32"),  # float32 training (the embedded study) stays float32
        (False, "bfloat16", "bfloat16"),  # asked for
        (True, "float32", "float32"),  # asked for: the master weights as they are
    ],
)
def test_final_model_is_saved_in_the_training_dtype(tiny_dir, tmp_path, bf16, setting, expected):
    trainer = trained(tiny_dir, tmp_path, bf16)
    final = tmp_path / "final"
    save_full_model(trainer, final, lora=False, dtype=setting)
    assert saved_dtypes(final) == {expected}
    assert recorded_dtype(final) == expected
    reloaded = AutoModelForCausalLM.from_pretrained(final, dtype="auto")
    assert reloaded.dtype == getattr(torch, expected)
    live = trainer.model.state_dict()
    for name, value in reloaded.state_dict().items():  # the trained weights, rounded once
        assert torch.equal(value, live[name].to(value.dtype)), name
    if reloaded.config.tie_word_embeddings:  # one tensor written, both names load it
        assert reloaded.lm_head.weight.data_ptr() == reloaded.model.embed_tokens.weight.data_ptr()


def perturbed(folder: Path, out: Path, dtype: torch.dtype, seed: int) -> Path:
    """A copy of ``folder`` with seeded noise on every weight, saved in ``dtype``."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.02)
    model.to(dtype).save_pretrained(out)
    AutoTokenizer.from_pretrained(folder).save_pretrained(out)
    return out


@pytest.mark.parametrize(("out_dtype", "expected"), [("auto", "bfloat16"), ("float32", "float32")])
def test_a_merge_of_bf16_experts_writes_their_dtype(tiny_dir, tmp_path, out_dtype, expected):
    base = perturbed(tiny_dir, tmp_path / "base", torch.bfloat16, seed=0)
    experts = [perturbed(tiny_dir, tmp_path / f"e{i}", torch.bfloat16, seed=i + 1) for i in (0, 1)]
    out = merge_models("ties", base, experts, None, tmp_path / "merged", out_dtype=out_dtype)
    assert saved_dtypes(out) == {expected}
    assert recorded_dtype(out) == expected
    assert json.loads((out / MERGE_INFO).read_text())["out_dtype"] == expected


def test_a_merge_of_float32_experts_stays_float32(tiny_dir, tmp_path):
    """The embedded study's case: float32 in, float32 out, the mean computed as before."""
    experts = [perturbed(tiny_dir, tmp_path / f"e{i}", torch.float32, seed=i) for i in (1, 2)]
    out = merge_models("average", None, experts, None, tmp_path / "merged")
    assert saved_dtypes(out) == {"float32"} and recorded_dtype(out) == "float32"
    merged = AutoModelForCausalLM.from_pretrained(out).state_dict()
    a, b = (AutoModelForCausalLM.from_pretrained(e).state_dict() for e in experts)
    for name, value in merged.items():
        assert torch.allclose(value, (a[name] + b[name]) / 2, atol=1e-6), name


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("trainer.save_dtype=fp8", "trainer.save_dtype"),
        ("merge.out_dtype=half", "merge.out_dtype"),
        ("merge.dtype=auto", "merge.dtype"),
    ],
)
def test_an_unknown_dtype_name_is_a_config_error(override, key):
    run: RunConfig = OmegaConf.to_object(compose(["run_name=t", override]))  # type: ignore[assignment]
    with pytest.raises(ConfigError, match=f"{key}=.* is not valid; choose one of"):
        validate(run, check_paths=False)


@pytest.mark.slow
@pytest.mark.parametrize(("setting", "expected"), [("auto", "bfloat16"), ("float32", "float32")])
def test_fsdp2_ranks_write_the_gathered_model_in_the_training_dtype(tiny_dir, tmp_path, rlvr_cache, setting, expected):
    """Real ``accelerate launch`` on two gloo ranks (FSDP2 through fsdp_on_cpu), bf16 mixed
    precision: the ranks hold float32 master weights; the final folder is bf16 unless asked."""
    from test_gpu_configs import free_port
    from test_multiprocess import launch_env

    from tests.support.two_ranks import run_two_ranks

    done = run_two_ranks(
        "tests.support.save_two_ranks",
        [str(tmp_path), str(tiny_dir), setting],
        launch_env(rlvr_cache),
        free_port(),
        fsdp=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    ranks = torch.load(tmp_path / "result.pt", weights_only=False)
    assert [r["fsdp"] for r in ranks] == [True, True]
    assert all(r["master"] == ["torch.float32"] for r in ranks)  # what used to be written
    assert saved_dtypes(tmp_path / "final") == {expected}
    assert recorded_dtype(tmp_path / "final") == expected
