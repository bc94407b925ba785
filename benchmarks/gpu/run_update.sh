#!/usr/bin/env bash
# One device call on one GPU: the policy-update levers on the 8B shape, then the single-GPU suite
# (naive / chunked / improved) on the 2B and 4B shapes for the planner's fit across shapes.
# Usage from the repository root: SITE_TAR=.gpu-stage/site.tar.xz bash benchmarks/gpu/run_update.sh "$OUT"
set -u
out=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # keep NVLink multicast off
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
site=/tmp/hprl/site-packages
if [ -n "${SITE_TAR:-}" ] && [ ! -d $site/liger_kernel ]; then mkdir -p $site && tar -xJf "$SITE_TAR" -C $site || exit 1; fi
export PYTHONPATH=$PWD:$site
pu() {  # seconds, output name, args...
  local limit=$1 name=$2; shift 2
  timeout -k 20 "$limit" python3 -m benchmarks.gpu.policy_update "$@" --steps 3 --out "$out/$name.json" 2>&1 \
    | grep -v "^USDT\|use_cache\|Warning\|warn(" | tee -a "$out/update.log"
}
pu "${T_LEVERS:-300}" h200_update_levers --suite levers --shape 8B
pu "${T_2B:-140}" h200_1gpu_2b --suite single --shape 2B
pu "${T_4B:-140}" h200_1gpu_4b --suite single --shape 4B
ls -la "$out"
