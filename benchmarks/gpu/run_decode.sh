#!/usr/bin/env bash
# One device call on a 2-GPU H200 machine: end-to-end GRPO steps with compiled decoding (static KV cache +
# CUDA graphs) against eager decoding and TRL's GRPOTrainer, 2B and 4B shapes on GPU 0, 8B on GPU 1.
# Usage from the repository root: SITE_TAR=.gpu-stage/site.tar.xz bash benchmarks/gpu/run_decode.sh "$OUT"
# Missing packages travel in $SITE_TAR (a tar.xz of a pip --target install; see docs/gpu.md).
set -u
out=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # keep NVLink multicast off
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
site=/tmp/hprl/site-packages  # a "site-packages" folder: dill (datasets' fingerprints) pickles modules elsewhere by value
if [ -n "${SITE_TAR:-}" ] && [ ! -d $site/trl ]; then mkdir -p $site && tar -xJf "$SITE_TAR" -C $site || exit 1; fi
export PYTHONPATH=$PWD:$site
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, peft, trl, pyarrow; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'trl', trl.__version__, 'pyarrow', pyarrow.__version__)"
  nproc; } > "$out/env.txt" 2>&1
cat "$out/env.txt"
e2e() {  # GPU, timeout, shape, extra args...
  local gpu=$1 limit=$2 shape=$3; shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout "$limit" python3 -m benchmarks.gpu.grpo_e2e --shapes "$shape" "$@" \
    --out "$out/h200_grpo_e2e_decode_${shape,,}.json" 2>&1 | grep -v "Warning\|warn(\|^ *$" | sed "s/^/[$shape] /"
}
( e2e 0 "${T2B:-330}" 2B --trl --decode-baseline; e2e 0 "${T4B:-200}" 4B ) > "$out/gpu0.log" &
e2e 1 "${T8B:-540}" 8B --trl --decode-baseline > "$out/gpu1.log" &
wait
tail -n 5 "$out"/gpu*.log
ls -la "$out"
