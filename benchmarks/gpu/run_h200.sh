#!/usr/bin/env bash
# One device call: 1-GPU suite (naive / chunked / improved) then the 2-GPU FSDP2 suite.
# Usage on the device machine (repo root): bash benchmarks/gpu/run_h200.sh "$OUT"
set -u
out=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # keep NVLink multicast off
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD TOKENIZERS_PARALLELISM=false
if [ -d .whl ]; then  # pydantic is not on the image: carried as wheels (see docs/planner.md)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=$PWD:/tmp/site
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/env.txt" 2>&1
nvidia-smi topo -m >> "$out/env.txt" 2>&1
python3 -c "import torch, transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__)" >> "$out/env.txt" 2>&1
cat "$out/env.txt"
ngpu=$(python3 -c "import torch; print(torch.cuda.device_count())")
if [ "${CHECK:-0}" = 1 ]; then  # chunked vs naive log-prob agreement on the full-size model
  CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m benchmarks.gpu.policy_update --suite check --out "$out/h200_logprob_check.json" 2>&1 | tee "$out/check.log" | grep -v "^USDT\|use_cache"
fi
if [ "${TUNE:-0}" = 1 ]; then  # FSDP2 wrapping options at world size 1
  CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m benchmarks.gpu.policy_update --suite tune --steps 3 --out "$out/h200_1gpu_fsdp_tuning.json" 2>&1 | tee "$out/tune.log" | grep -v "^USDT\|use_cache"
fi
if [ "${SKIP_SINGLE:-0}" != 1 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout "${SINGLE_TIMEOUT:-330}" python3 -m benchmarks.gpu.policy_update --suite single --steps 3 --out "$out/h200_1gpu.json" 2>&1 | tee "$out/single.log" | grep -v "^USDT\|use_cache"
fi
if [ "${FSDP1:-0}" = 1 ]; then  # the FSDP2 suite at world size 1: the 1-GPU points of the scaling curve
  CUDA_VISIBLE_DEVICES=0 timeout "${FSDP_TIMEOUT:-230}" torchrun --nproc-per-node 1 -m benchmarks.gpu.policy_update --suite fsdp --steps 5 --out "$out/h200_1gpu_fsdp.json" 2>&1 | tee "$out/fsdp1.log" | grep -v "^USDT\|use_cache"
fi
if [ "$ngpu" -ge 2 ] && [ "${SKIP_FSDP:-0}" != 1 ]; then
  timeout "${FSDP_TIMEOUT:-230}" torchrun --nproc-per-node 2 -m benchmarks.gpu.policy_update --suite fsdp --steps 3 --out "$out/${FSDP_OUT:-h200_2gpu_fsdp.json}" 2>&1 | tee "$out/fsdp.log" | grep -v "^USDT\|use_cache"
fi
ls -la "$out"
