#!/usr/bin/env bash
# One device call of issue 40's learning curve (benchmarks/gpu/maze_curve.py), after stage.sh calls 1..N-1 on the same
# machine (each call started within 30 s of the last one's end). From the repository root:
#   HPRL_GIT_COMMIT=<git rev-parse HEAD, here> HPRL_GIT_MANIFEST=$PWD/.curve-state/git-manifest.txt \
#   SEED=0 [KIT_CALL=N] [ENGINE=vllm] [CURVE_ARGS="..."] [BUDGET_S=570] [PACK=1] bash benchmarks/gpu/run_curve.sh
# (the manifest: `git ls-files -s > .curve-state/git-manifest.txt` here, after the last commit; carry .curve-state, so
# the result says whether the device copy differed from that commit: benchmarks/_record.py)
# KIT_CALL=N (carry .gpu-kit/callN): stages the kit's last call first. The seed's state lives under build/maze_curve/sSEED
# (ignored: it stays while the machine is warm); on a cold machine it is unpacked from .curve-state/sSEED when that is
# carried (the parts a PACK=1 call wrote to $OUT/state_sSEED). The same command continues where the last call stopped.
# ENGINE=vllm (the reference backend's colocated vLLM engine) gives way to transformers' generate (--engine hf) when the
# vLLM engine fails before GRPO trained a step; the result says which engine ran. Once GRPO trained a step, later calls
# continue with the engine it trains with, whatever ENGINE says. BATCH=jobs.json runs several maze_curve runs side by
# side instead (benchmarks/gpu/curve_batch.py: lever runs from a seed's SFT, other seeds). Writes to $OUT: the log and the result
# ({gpu}_maze_curve_sSEED.json, rewritten at every evaluation point), and with PACK=1 the state's parts.
set -uo pipefail
t0=$(date +%s)
out=${OUT:-$PWD/.gpu-out}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
seed=${SEED:-0}
engine=${ENGINE:-vllm}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o -i -E 'h100|h200' | tr '[:upper:]' '[:lower:]')
record=${RECORD:-${gpu:-gpu}_maze_curve_s$seed}
record=${record//\{gpu\}/${gpu:-gpu}}
state=build/maze_curve/s$seed
log=$out/curve_s${seed}_$(date -u +%H%M%S).log
left() { echo $(( ${BUDGET_S:-570} - ($(date +%s) - t0) - ${1:-0} )); }
curve() {  # curve ENGINE: one run of the benchmark on what is left of the budget (30 s kept for the pack)
  # shellcheck disable=SC2086 # CURVE_ARGS are words
  python3 -m benchmarks.gpu.maze_curve run --state "$state" --out "$out/$record.json" --seed "$seed" --engine "$1" \
    --time-budget "$(left 30)" ${CURVE_ARGS:-}
}
{
  echo "== run_curve.sh on $(hostname) at $(date -u +%FT%TZ), seed $seed"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  # shellcheck disable=SC1091 # linted on its own (tests/test_gpu_kit.py)
  source benchmarks/gpu/stage_env.sh
  stage_env || exit $?
  if [ -n "${BATCH:-}" ]; then  # several runs side by side (benchmarks/gpu/curve_batch.py): SEED, ENGINE, PACK unused
    python3 -m benchmarks.gpu.curve_batch "$BATCH" --out "$out" --budget "$(left 5)"; rc=$?
    echo "== curve_batch exit $rc after $(( $(date +%s) - t0 )) s"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader
    exit "$rc"
  fi
  if [ ! -f "$state/state.json" ] && [ -f ".curve-state/s$seed/maze_state.json" ]; then
    python3 -m benchmarks.gpu.maze_curve unpack --from ".curve-state/s$seed" --state "$state" || exit 5
  fi
  # GRPO that trained a step keeps its engine (after a fallback to hf, ENGINE=vllm would be refused: exit 2)
  trained=$([ -f "$state/state.json" ] && python3 - "$state/state.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["grpo"]
print((g.get("engine_option") or "") if any(p["step"] > 0 for p in g["points"]) else "")
PY
)
  if [ -n "$trained" ] && [ "$trained" != "$engine" ]; then
    echo "== GRPO in $state trains with --engine $trained: continuing with it (ENGINE=$engine asked)"
    engine=$trained
  fi
  curve "$engine"; rc=$?
  if [ "$rc" -ne 0 ] && [ "$engine" = vllm ] && [ -f "$state/state.json" ] && python3 - "$state/state.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["sft"]["done"] and not any(p["step"] > 0 for p in d["grpo"]["points"]) else 1)
PY
  then
    echo "== the vLLM engine failed before GRPO trained a step (exit $rc): GRPO with --engine hf, $(left) s left"
    curve hf; rc=$?
  fi
  echo "== maze_curve exit $rc after $(( $(date +%s) - t0 )) s"
  if [ -n "${PACK:-}" ]; then
    python3 -m benchmarks.gpu.maze_curve pack --state "$state" --to "$out/state_s$seed" || echo "== pack refused (see above)"
  fi
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
  exit "$rc"
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
