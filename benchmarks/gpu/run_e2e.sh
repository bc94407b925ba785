#!/usr/bin/env bash
# One device call: end-to-end GRPO steps (reference backend, and TRL GRPOTrainer beside it) per model shape.
# Usage on the device machine, from the repository root: bash benchmarks/gpu/run_e2e.sh "$OUT" [SHAPE ...]
# Missing packages (pydantic, skyrl-gym, pandas, pyarrow, trl, datasets and their needs) travel in
# $SITE_TAR (a tar.xz of a pip --target install; see docs/gpu.md).
set -u
out=${1:?output folder}
shift
shapes=${*:-2B 8B}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # keep NVLink multicast off
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
if [ -n "${SITE_TAR:-}" ]; then
  # under a "site-packages" folder: dill (datasets' fingerprints) pickles modules from anywhere else by value
  site=/tmp/hprl/site-packages
  if [ ! -d $site/pyarrow ]; then
    mkdir -p $site && tar -xJf "$SITE_TAR" -C $site || exit 1
    for extra in ${SITE_EXTRA:-}; do xz -dc "$extra" > "$site/pyarrow/$(basename "${extra%.xz}")" || exit 1; done
  fi
  export PYTHONPATH=$PWD:$site
else
  export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/env.txt" 2>&1
python3 -c "import torch, transformers, peft, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'trl', trl.__version__)" >> "$out/env.txt" 2>&1
cat "$out/env.txt"
for shape in $shapes; do
  timeout "${SHAPE_TIMEOUT:-280}" python3 -m benchmarks.gpu.grpo_e2e --shapes "$shape" ${E2E_ARGS:---trl} \
    --out "$out/h200_grpo_e2e${TAG:-}_${shape,,}.json" 2>&1 | tee "$out/e2e${TAG:-}_${shape,,}.log" | grep -v "Warning\|warn(" | grep -v "^ *$"
done
ls -la "$out"
