#!/usr/bin/env bash
# One device call on one GPU: a list of benchmark runs, one after another, each under its own time limit.
# Usage from the repository root (pass HPRL_GIT_COMMIT=$(git rev-parse HEAD): the device copy's git is not this one):
#   SITE_TAR=.gpu-stage/site.tar.xz RUNS="update:330:h200_update_ckpt:--suite ckpt --shape 8B;e2e:220:h200_grpo_e2e_trl_mb8_2b:--shapes 2B --max-turns 1 --trl --micro-batch 8" \
#     bash benchmarks/gpu/run_device.sh "$OUT"
# RUNS: ';'-separated KIND:SECONDS:NAME:ARGS. KIND 'update' runs benchmarks.gpu.policy_update (killed at SECONDS),
# 'e2e' runs benchmarks.gpu.grpo_e2e (SIGINT at SECONDS: the runs done by then are kept); each writes $OUT/NAME.json.
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
IFS=';' read -ra runs <<< "${RUNS:?RUNS=KIND:SECONDS:NAME:ARGS;...}"
for run in "${runs[@]}"; do
  IFS=':' read -r kind limit name args <<< "$run"
  echo "== $kind $name ($limit s): $args"
  # shellcheck disable=SC2086 # ARGS are words
  case $kind in
    update) timeout -k 20 "$limit" python3 -m benchmarks.gpu.policy_update $args --steps 3 --out "$out/$name.json" 2>&1 \
              | grep -v "^USDT\|use_cache\|Warning\|warn(" | tee -a "$out/run.log" ;;
    e2e) timeout -s INT -k 20 "$limit" python3 -m benchmarks.gpu.grpo_e2e $args --out "$out/$name.json" 2>&1 \
              | grep -v "Warning\|warn(\|^ *$" | tee -a "$out/run.log" | grep -v '"warmup"' ;;
    *) echo "unknown kind $kind (update or e2e)"; exit 2 ;;
  esac
done
ls -la "$out"
