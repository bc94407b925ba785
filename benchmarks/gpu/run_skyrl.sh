#!/usr/bin/env bash
# One run call of the SkyRL 0.3.0 GPU benchmark (benchmarks/gpu/skyrl_e2e.py), after stage.sh calls 1..N-1 on the
# same machine (each call started within 30 s of the last one's end). From the repository root:
#   HPRL_GIT_COMMIT=<40-hex sha of the commit that ran: git rev-parse HEAD, here> [PHASES=train,resume,serve] [E2E_ARGS="--init-adapter"] [KIT_CALL=N] [RECORD=name] bash benchmarks/gpu/run_skyrl.sh
# RECORD names the result file ($OUT/RECORD.json; default skyrl_e2e_$TAG); "{gpu}" in it becomes h100 or h200.
# KIT_CALL=N (carry .gpu-kit/callN): stages the kit's last call first. Without PHASES the phases follow from what
# this machine already has: an exported adapter -> serve; a checkpoint -> resume,serve; else train,resume,serve.
# Writes to $OUT (the device call's output folder): the log, the result JSON, each run's metrics.jsonl and the tails
# of SkyRL's logs; prints the first error lines of SkyRL's and vLLM's logs and a per-phase summary. NVLink multicast
# stays off; `ray stop --force` runs first (a cluster left by a timed-out call holds the GPU) and last.
set -uo pipefail
t0=$(date +%s)
out=${OUT:-$PWD/.gpu-out}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
tag=${TAG:-$(date -u +%H%M%S)}
log=$out/run_$tag.log
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o -i -E 'h100|h200' | tr '[:upper:]' '[:lower:]')
record=${RECORD:-skyrl_e2e_$tag}
record=${record//\{gpu\}/${gpu:-gpu}}
{
  echo "== run_skyrl.sh on $(hostname) at $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  # shellcheck disable=SC1091 # linted on its own (tests/test_gpu_kit.py)
  source benchmarks/gpu/stage_env.sh
  stage_env || exit $?
  export HPRL_E2E_STORAGE=$HOME/e2e HPRL_RESULTS_DIR=$out
  ray stop --force >/dev/null 2>&1 || true
  run_dir=$HOME/e2e/runs/skyrl-e2e-${SHAPE:-2b}
  if [ -f "$run_dir/adapter/provenance.json" ]; then phases=serve
  elif [ -f "$run_dir/checkpoints/latest_ckpt_global_step.txt" ]; then phases=resume,serve
  else phases=train,resume,serve; fi
  phases=${PHASES:-$phases}
  left=$(( ${BUDGET_S:-570} - ($(date +%s) - t0) ))
  echo "== phases $phases, $left s left"
  # shellcheck disable=SC2086 # E2E_ARGS are words
  python3 -m benchmarks.gpu.skyrl_e2e --out "$out/$record.json" --phases "$phases" --time-budget "$left" --copy-to "$out" ${E2E_ARGS:-}
  echo "== e2e exit $? after $(( $(date +%s) - t0 )) s"
  echo "== first error lines of SkyRL's and vLLM's logs:"
  cat "$out"/skyrl_logs_*.txt 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Error|Exception|error:" \
    | grep -v -E "WARNING|ulimit|^\s*\^" | cut -c1-300 | awk '!seen[$0]++' | head -12
  python3 - "$out/$record.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
keys = ("step", "timing/step", "timing/generate", "timing/policy_train", "timing/sync_weights", "samples_per_s",
        "generated_tokens_per_s", "policy/rollout_train_logprobs_abs_diff_mean", "reward/avg_raw_reward")
for name, ph in r["phases"].items():
    m = ph.get("metrics") or []
    print(f"phase {name}: ok={r['passed'].get(name)} s={ph.get('seconds')} peak={ph.get('peak_gpu_gib')} err={str(ph.get('error', ''))[:200]} steps={[x.get('step') for x in m]}")
    for x in m:
        print("   ", {k: v for k, v in x.items() if k in keys})
    for line in [l for l in ph.get("job_log_tail", []) if "Error" in l][-5:]:
        print("    job:", line[:300])
    if ph.get("init_adapter_check"):
        print("    init adapter:", ph["init_adapter_check"])
PY
  ray stop --force >/dev/null 2>&1 || true
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
} 2>&1 | tee "$log"
