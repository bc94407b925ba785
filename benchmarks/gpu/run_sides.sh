#!/usr/bin/env bash
# One device call of issue 41's comparison (benchmarks/gpu/sides.py: ours against TRL's GRPOTrainer with vLLM
# colocate, each side in a fresh process, order alternated), after stage.sh calls 1..N-1 of a kit built with
# `python -m benchmarks.gpu.kit --trl` (each call started within 30 s of the last one's end). From the repository root:
#   HPRL_GIT_COMMIT=<git rev-parse HEAD, here> HPRL_GIT_MANIFEST=$PWD/.curve-state/git-manifest.txt \
#   CELLS="8B:1 2B:3" [SIDES="ours-vllm trl-vllm-0.3"] [REPS=3] [KIT_CALL=N] [BUDGET_S=570] [SIDE_TIMEOUT=420] \
#   [SIDES_ARGS="..."] bash benchmarks/gpu/run_sides.sh
# CELLS: SHAPE:TURNS pairs, run in that order. Each cell's result lives under build/sides/ (ignored: it stays while
# the machine is warm) and is copied to $OUT every 10 s and at the end, so a call cut off by the device's time limit
# still returns the runs that finished. The same command continues where the last call stopped (sides.py --resume:
# only the missing repetitions run). A cell is not started with less than 150 s of the budget left.
set -uo pipefail
t0=$(date +%s)
out=${OUT:-$PWD/.gpu-out}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o -i -E 'h100|h200' | tr '[:upper:]' '[:lower:]')
state=build/sides; mkdir -p "$state"
log=$out/sides_$(date -u +%H%M%S).log
left() { echo $(( ${BUDGET_S:-570} - ($(date +%s) - t0) )); }
(while sleep 10; do cp -f "$state"/*.json "$out"/ 2>/dev/null; done) &
syncer=$!
trap 'kill "$syncer" 2>/dev/null; cp -f "$state"/*.json "$out"/ 2>/dev/null' EXIT
{
  echo "== run_sides.sh on $(hostname) at $(date -u +%FT%TZ): cells ${CELLS:?CELLS=SHAPE:TURNS ...}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  # shellcheck disable=SC1091 # linted on its own (tests/test_gpu_kit.py)
  source benchmarks/gpu/stage_env.sh
  stage_env || exit $?
  python3 -c "import torch, transformers, peft, trl, vllm; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'trl', trl.__version__, 'vllm', vllm.__version__)" || exit 5
  rc=0
  for cell in $CELLS; do
    shape=${cell%%:*}; turns=${cell##*:}
    name=${gpu:-gpu}_sides_$(echo "$shape" | tr '[:upper:]' '[:lower:]')_t$turns
    res=$state/$name.json
    resume=()
    newest=$res; [ "$state/$name.partial.json" -nt "$newest" ] && newest=$state/$name.partial.json
    [ -f "$newest" ] && resume=(--resume "$newest")
    if [ "$(left)" -lt 150 ]; then echo "== $cell not started: $(left) s left"; break; fi
    echo "== cell $cell ($name), $(left) s left"
    # shellcheck disable=SC2086 # SIDES and SIDES_ARGS are words
    timeout -s INT "$(( $(left) - 10 ))" python3 -m benchmarks.gpu.sides --shape "$shape" --turns "$turns" \
      --sides ${SIDES:-ours-vllm trl-vllm-0.3} --reps "${REPS:-3}" --side-timeout "${SIDE_TIMEOUT:-420}" \
      "${resume[@]}" --out "$res" ${SIDES_ARGS:-}
    rc=$?
    echo "== cell $cell: exit $rc after $(( $(date +%s) - t0 )) s"
  done
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
  exit "$rc"
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
