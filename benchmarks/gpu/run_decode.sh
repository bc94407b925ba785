#!/usr/bin/env bash
# One device call: end-to-end GRPO steps with compiled decoding (static KV cache + CUDA graphs), against eager
# decoding and TRL's GRPOTrainer, one shape after another on one GPU.
# Usage from the repository root:
#   SITE_TAR=.gpu-stage/site.tar.xz RUNS="2B:300:--trl --decode-baseline;8B:270:--trl" bash benchmarks/gpu/run_decode.sh "$OUT"
# RUNS: ';'-separated SHAPE:SECONDS:ARGS (SECONDS: SIGINT after that long; the runs done by then are kept).
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
  echo "cpus $(nproc)"; } > "$out/env.txt" 2>&1
cat "$out/env.txt"
IFS=';' read -ra runs <<< "${RUNS:-2B:300:--trl --decode-baseline;8B:270:--trl}"
for run in "${runs[@]}"; do
  IFS=':' read -r shape limit args <<< "$run"
  # shellcheck disable=SC2086 # ARGS are words
  timeout -s INT -k 20 "$limit" python3 -m benchmarks.gpu.grpo_e2e --shapes "$shape" $args \
    --out "$out/h200_grpo_e2e${TAG:-_decode}_${shape,,}.json" 2>&1 | grep -v "Warning\|warn(\|^ *$" | tee -a "$out/e2e.log" | grep -v '"warmup"'
done
ls -la "$out"
