"""Equal weights evaluated once: fingerprints, reuse keys, and records copied to the twin."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from test_evaluate import eval_run, read_jsonl
from test_merge import one_torch_thread, tiny_family  # noqa: F401  (autouse fixture)

from rlvr.evaluation.evaluator import evaluate
from rlvr.evaluation.reuse import reuse_key, weights_fingerprint


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    return tiny_family(tmp_path_factory.mktemp("reusefamily"), 1)


def test_the_fingerprint_reads_what_decides_outputs_and_not_provenance(family, tmp_path):
    base, (expert,) = family
    twin = shutil.copytree(base, tmp_path / "twin")
    assert weights_fingerprint(twin) == weights_fingerprint(base) is not None
    (twin / "merge.json").write_text(json.dumps({"method": "something else"}))
    (twin / "mergekit_config.yml").write_text("merge_method: ramplus_tl\n")
    assert weights_fingerprint(twin) == weights_fingerprint(base)  # how it was made: ignored
    assert weights_fingerprint(expert) != weights_fingerprint(base)
    config = json.loads((twin / "config.json").read_text())
    (twin / "config.json").write_text(json.dumps({**config, "rope_theta": 12345.0}))
    assert weights_fingerprint(twin) != weights_fingerprint(base)  # remembered only while equal
    assert weights_fingerprint("tiny") is None and weights_fingerprint(tmp_path / "none") is None


def test_the_reuse_key_ignores_labels_and_names_but_not_settings(family, tmp_path):
    base, _ = family
    run = eval_run(tmp_path, [f"a={base}"], ["micro_math"])
    fingerprint = weights_fingerprint(base)
    key = reuse_key(fingerprint, "micro_math", run)
    renamed = replace(run, run_name="other", eval=replace(run.eval, models=[f"b={base}"]))
    assert reuse_key(fingerprint, "micro_math", renamed) == key
    moved = replace(
        run,
        eval=replace(run.eval, out_dir=str(tmp_path / "copied")),
        study=replace(run.study, launcher="submitit_local"),
    )
    assert reuse_key(fingerprint, "micro_math", moved) == key  # a copied study, another launcher
    assert reuse_key(fingerprint, "micro_code", run) != key
    assert reuse_key(fingerprint, "micro_math", replace(run, eval=replace(run.eval, k=2))) != key
    assert reuse_key(None, "micro_math", run) is None


def test_a_twin_of_evaluated_weights_gets_their_records_and_other_models_sample(family, tmp_path):
    base, (expert,) = family
    twin = shutil.copytree(base, tmp_path / "models" / "twin")
    (twin / "merge.json").write_text(json.dumps({"name": "ramplus_tl"}))
    study = evaluate(eval_run(tmp_path, [f"first={base}", f"twin={twin}", f"other={expert}"], ["micro_math"]))
    first, copied, other = (
        json.loads((study / "eval" / label / "micro_math.json").read_text()) for label in ("first", "twin", "other")
    )
    assert copied["reused_from"] == "first" and copied["model"] == "twin"
    assert copied["model_path"] == str(twin) and "reused_from" not in other | first
    assert copied["avg_at_k"] == first["avg_at_k"] and first["seconds"] > copied["seconds"] == 0
    records = read_jsonl(study / "eval" / "twin" / "micro_math.jsonl")
    assert {r["model"] for r in records} == {"twin"}
    original = read_jsonl(study / "eval" / "first" / "micro_math.jsonl")
    assert [{**r, "model": "first"} for r in records] == original
    info = json.loads((study / "eval" / "twin" / "model.json").read_text())
    assert info["merge"] == {"name": "ramplus_tl"}  # its own provenance, not the twin's
    # other settings into the same study: the twin is sampled, not copied
    again = eval_run(tmp_path, [f"twin-k2={twin}"], ["micro_math"], k=2)
    evaluate(again)
    fresh = json.loads((study / "eval" / "twin-k2" / "micro_math.json").read_text())
    assert "reused_from" not in fresh and fresh["k"] == 2
