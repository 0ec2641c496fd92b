#!/usr/bin/env bash
# One-GPU check of the real-size path, in under 8 minutes on one H100/H200-class GPU:
#   1. GRPO for 10 steps of a Qwen2.5-0.5B-shaped model (random init, bf16, built from
#      config) on mixed math and code rows, checkpointing at step 5;
#   2. a resume: the last checkpoint and final/ removed, the rerun continues from step 5;
#   3. a second run (another seed), a merge of the two, and an evaluation of run and merge;
#   4. tokens/s, the step-time split and peak GPU memory;
#   5. the resource plan's prediction for the same run (rlvr.planning), to set beside 4.
# vLLM generates (trainer.use_vllm, eval.backend=vllm) where it imports; otherwise HF generate.
#
#   bash scripts/gpu_check.sh                 # on a GPU machine (the wheels: scripts/gpu_wheels.txt)
#   bash scripts/gpu_check.sh --cpu           # the same steps on the embedded tiny model (CI)
#   bash scripts/gpu_check.sh --out /scratch/gpu_check
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python; fi
fi
MODE=gpu
OUT="${TMPDIR:-/tmp}/rlvr_gpu_check"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu) MODE=cpu; shift ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1' (use --cpu, --out DIR)" >&2; exit 2 ;;
  esac
done
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled
rm -rf "$OUT"
mkdir -p "$OUT"

ARGS=(experiment=gpu_check "paths.output_root=$OUT" resume=true)
EVAL_ARGS=()
STEPS=10
HALF=5
if [[ "$MODE" == cpu ]]; then
  STEPS=4
  HALF=2
  ARGS+=(model=tiny trainer=cpu "trainer.max_steps=$STEPS" "trainer.save_steps=$HALF")
  ARGS+=(algo.prompts_per_step=2 algo.max_completion_length=32 trainer.verifier_workers=1)
  EVAL_ARGS+=(model=tiny eval.k=2 eval.max_prompts=4 eval.max_new_tokens=32 eval.workers=1)
else
  if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check.sh: torch sees no CUDA device; on a CPU machine run: bash scripts/gpu_check.sh --cpu" >&2
    exit 1
  fi
  if "$PY" -c "import vllm" 2>/dev/null; then
    echo "vLLM found: generation through vLLM (colocated in training, eval.backend=vllm)"
    ARGS+=(trainer.use_vllm=true)
    EVAL_ARGS+=(eval.backend=vllm)
  else
    echo "vLLM not installed: generation through HF generate"
  fi
fi

train() {  # train RUN_NAME [overrides...]: one rlvr.train run, its log in $OUT/RUN_NAME.log
  local name="$1"; shift
  "$PY" -m rlvr.train "${ARGS[@]}" "run_name=$name" "$@" 2>&1 | tee -a "$OUT/$name.log"
}

started=$(date +%s)
echo "== 1. GRPO, $STEPS steps ($MODE)"
train a
A="$OUT/gpu_check/a"
test -f "$A/final/config.json" || { echo "FAIL: $A/final holds no model" >&2; exit 1; }

echo "== 2. resume from checkpoint-$HALF"
rm -rf "$A/checkpoints/checkpoint-$STEPS" "$A/final" "$A/summary.json"
train a >/dev/null
grep -q "resuming from .*checkpoint-$HALF" "$OUT/a.log" \
  || { echo "FAIL: the rerun did not resume from checkpoint-$HALF" >&2; exit 1; }
"$PY" - "$A" "$STEPS" <<'EOF'
import json, sys
from pathlib import Path
run, steps = Path(sys.argv[1]), int(sys.argv[2])
state = json.loads((run / "checkpoints" / f"checkpoint-{steps}" / "trainer_state.json").read_text())
assert state["global_step"] == steps, state["global_step"]
assert (run / "final" / "config.json").exists(), "no final model after the resume"
EOF

echo "== 3. a second run, the merge, the evaluation"
train b trainer.seed=1 >/dev/null
B="$OUT/gpu_check/b"
"$PY" -m rlvr.merge experiment=gpu_check merge=average "merge.models=[$A,$B]" \
  "merge.out_dir=$OUT/merge" logger=none "hydra.run.dir=$OUT/hydra/merge" 2>&1 | tail -3
"$PY" -m rlvr.evaluate experiment=gpu_check "eval.models=[\"a=$A/final\",\"merge=$OUT/merge\"]" \
  "eval.tasks=[micro_math,micro_code]" "eval.out_dir=$OUT/eval" "${EVAL_ARGS[@]}" logger=none \
  "hydra.run.dir=$OUT/hydra/eval" 2>&1 | tail -8

echo "== 4. figures"
"$PY" - "$OUT" "$MODE" "$(( $(date +%s) - started ))" <<'EOF'
import json, sys
from pathlib import Path
out, mode, wall = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for name in ("a", "b"):
    rl = json.loads((out / "gpu_check" / name / "summary.json").read_text())["rl"]
    update = rl["seconds"] - rl["generation_s"] - rl["reward_s"]
    gpu = f"{rl['peak_gpu_gib']:.2f} GiB" if rl.get("peak_gpu_gib") is not None else "n/a (CPU)"
    print(
        f"run {name}: {rl['steps']} steps in {rl['seconds']:.1f} s, "
        f"{rl['tokens'] / rl['seconds']:.0f} tokens/s; split: generation {rl['generation_s']:.1f} s, "
        f"reward {rl['reward_s']:.1f} s, update and the rest {update:.1f} s; "
        f"peak GPU memory {gpu}, peak RSS {rl['peak_rss_gib']:.2f} GiB"
    )
for label in ("a", "merge"):
    for bench in ("micro_math", "micro_code"):
        s = json.loads((out / "eval" / "eval" / label / f"{bench}.json").read_text())
        assert sum(s["status_counts"].values()) > 0, (label, bench)
        print(f"eval {label:5s} {bench:10s} avg@k {100 * s['avg_at_k']:.2f}  statuses {s['status_counts']}")
print(f"gpu_check ({mode}) passed in {wall} s")
EOF

echo "== 5. the resource plan of run a (compare its per-device total with the peak above)"
"$PY" -m rlvr.train "${ARGS[@]}" run_name=a dry_run=true 2>/dev/null | grep -E "device\(s\)|per device"
