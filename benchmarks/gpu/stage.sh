#!/usr/bin/env bash
# Stage device call K of the GPU kit on the GPU machine (the folders come from benchmarks/gpu/kit.py).
# Usage, from the repository root, one device call each, back to back (a call must start within 30 s of
# the last one's end, or the machine is fresh and the earlier parts are gone):
#   call K (carry .gpu-kit/callK):  bash benchmarks/gpu/stage.sh K
#   last call:                       bash benchmarks/gpu/stage.sh N && source $HOME/stage/env.sh && <workload>
# Each call copies its parts into $HOME/stage/parts, joins every payload whose parts have all arrived (size and
# sha256 checked against MANIFEST.tsv), unpacks the tars (vLLM) at once and pip-installs a target's wheels in
# one run once all of them are here, so the last call only installs its own share.
# Payloads go to $HOME/hprl/site-packages (vLLM 0.23.0, Ray 2.56.0, ours; $HOME/site links to it) or
# $HOME/hprl/site-skyrl/site-packages (SkyRL 0.3.0, transformers 5.8.0, peft 0.18.1; $HOME/site-skyrl), named
# "site-packages" because dill (datasets' fingerprints) pickles modules from anywhere else by value.
# The last call checks every payload is there, writes $HOME/stage/env.sh and prints an import check (about a
# minute; SKIP_IMPORT_CHECK=1 skips it when the run that follows checks the same imports).
# Idempotent: once $HOME/stage/STAGED exists (and $HOME/site/vllm/__init__.py), it only rewrites env.sh.
set -uo pipefail
k=${1:?usage: stage.sh K (the call number, 1..N)}
src=${KIT_DIR:-.gpu-kit}/call$k
stage=$HOME/stage
site=$HOME/hprl/site-packages
skyrl=$HOME/hprl/site-skyrl/site-packages
t0=$(date +%s.%N)
elapsed() { python3 -c "import time; print(f'{time.time() - $t0:.1f} s')"; }

write_env() {
  mkdir -p "$HOME/hprl/bin"
  # `ray` for hyperpod_rl.cluster.local (pip --target installs no console scripts for this interpreter)
  printf '#!/bin/sh\nexec python3 -m ray.scripts.scripts "$@"\n' > "$HOME/hprl/bin/ray" && chmod +x "$HOME/hprl/bin/ray"
  cat > "$stage/env.sh" <<EOF
# written by benchmarks/gpu/stage.sh: source it from the repository root
export HPRL_SITE=$site
export HPRL_SITE_SKYRL=$skyrl
export PYTHONPATH=$site:\$PWD
export PATH=$HOME/hprl/bin:\$PATH
export VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false RAY_USAGE_STATS_ENABLED=0
# SkyRL runs put SkyRL's pins in front:  PYTHONPATH=\$HPRL_SITE_SKYRL:\$PYTHONPATH python3 -m ...
EOF
  echo "env: source \$HOME/stage/env.sh  ($stage/env.sh)"
}

import_check() {
  # shellcheck disable=SC1091
  (source "$stage/env.sh"
   python3 -c "import vllm, ray, transformers, peft, pydantic, tenacity, jsonschema, skyrl_gym, datasets, ray.job_submission, ray.dashboard.modules.job.job_head
import hyperpod_rl.jobs, hyperpod_rl.cluster.local, hyperpod_rl.train.reference
print('import check (site):', 'vllm', vllm.__version__, 'ray', ray.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'datasets', datasets.__version__)" &&
   PYTHONPATH=$HPRL_SITE_SKYRL:$PYTHONPATH python3 -c "import vllm, ray, skyrl, skyrl_gym, transformers, peft, loguru, omegaconf, torchdata, vllm_router, uvicorn, datasets
import skyrl.train.entrypoints.main_base, skyrl.train.config, skyrl.train.generators.skyrl_vlm_generator
import skyrl.backends.skyrl_train.workers.fsdp.fsdp_worker, skyrl.backends.skyrl_train.inference_servers.vllm_server_actor
import skyrl.backends.skyrl_train.inference_servers.setup, skyrl.backends.skyrl_train.inference_servers.vllm_router
import hyperpod_rl.train.skyrl_backend
from importlib.metadata import version
print('import check (site-skyrl):', 'skyrl', version('skyrl'), 'skyrl-gym', version('skyrl-gym'), 'transformers', transformers.__version__, 'peft', peft.__version__, 'vllm', vllm.__version__, 'ray', ray.__version__)")
}

if [ -f "$stage/STAGED" ] && [ -f "$HOME/site/vllm/__init__.py" ]; then
  echo "stage.sh $k: already staged on this machine ($(cat "$stage/STAGED"))"
  write_env
  exit 0
fi
[ -f "$src/MANIFEST.tsv" ] || { echo "stage.sh $k: $src/MANIFEST.tsv missing: carry .gpu-kit/call$k (made by python -m benchmarks.gpu.kit)"; exit 2; }
calls=$(awk -F'\t' '$1 == "# calls" {print $2}' "$src/MANIFEST.tsv")
if [ "$k" -gt 1 ] && ! cmp -s "$src/MANIFEST.tsv" "$stage/MANIFEST.tsv"; then
  if [ -f "$stage/MANIFEST.tsv" ]; then
    echo "stage.sh $k: the staged parts come from another kit build ($stage/MANIFEST.tsv differs): run calls 1..$calls of one build"
  else
    echo "stage.sh $k: fresh machine (nothing of calls 1..$((k - 1)) is left: a call started more than 30 s after the previous one ended); run calls 1..$calls again"
  fi
  exit 3
fi
mkdir -p "$stage/parts" "$stage/done" "$site" "$skyrl"
ln -sfn "$site" "$HOME/site"
ln -sfn "$skyrl" "$HOME/site-skyrl"
cp "$src/MANIFEST.tsv" "$stage/MANIFEST.tsv"
cp "$src"/*.part[0-9][0-9] "$stage/parts/" 2>/dev/null
nparts=0
for f in "$src"/*.part[0-9][0-9]; do [ -f "$f" ] && nparts=$((nparts + 1)); done
echo "stage.sh $k/$calls: $nparts parts copied ($(du -sb "$src" | cut -f1) bytes) $(elapsed)"
status=0
while IFS=$'\t' read -r name target sum size parts; do
  case $name in '#'*|'') continue ;; esac
  [ -f "$stage/done/$name" ] && continue
  IFS=',' read -ra files <<< "$parts"
  missing=0
  for f in "${files[@]}"; do [ -f "$stage/parts/$f" ] || missing=$((missing + 1)); done
  if [ "$missing" -gt 0 ]; then echo "  $name: $missing of ${#files[@]} parts still to come"; continue; fi
  case $target in site) dest=$site ;; site-skyrl) dest=$skyrl ;; *) echo "  $name: unknown target $target"; status=4; continue ;; esac
  mkdir -p "$stage/wheels/$target"
  case $name in *.whl) joined=$stage/wheels/$target/$name ;; *) joined=$stage/$name ;; esac
  (cd "$stage/parts" && cat "${files[@]}") > "$joined"
  got=$(stat -c %s "$joined")
  gotsum=$(sha256sum "$joined" | cut -d' ' -f1)
  if [ "$got" != "$size" ] || [ "$gotsum" != "$sum" ]; then
    echo "  $name: joined file is $got bytes, sha256 $gotsum; MANIFEST.tsv says $size bytes, $sum"
    status=4
    continue
  fi
  rm -f "${files[@]/#/$stage/parts/}"
  case $name in
    *.whl) echo "$size bytes, sha256 $sum" > "$stage/done/$name" ;;  # pip-installed with the rest of its target below
    *.tar*)
      if ! tar -xf "$joined" -C "$dest"; then echo "  $name: tar -xf failed"; status=4; continue; fi
      rm -f "$joined"
      echo "$size bytes, sha256 $sum" > "$stage/done/$name"
      echo "  unpacked $name into $dest ($size bytes, sha256 ok) $(elapsed)" ;;
    *) echo "  $name: neither a wheel nor a tar"; status=4 ;;
  esac
done < "$stage/MANIFEST.tsv"
# The wheels of a target, once all are here: one pip run (one run, so namespace packages of several wheels merge).
for target in site site-skyrl; do
  case $target in site) dest=$site ;; site-skyrl) dest=$skyrl ;; esac
  want=$(awk -F'\t' -v t="$target" '$1 !~ /^#/ && $2 == t && $1 ~ /\.whl$/ {print $1}' "$stage/MANIFEST.tsv")
  [ -n "$want" ] || continue
  [ -f "$stage/done/pip-$target" ] && continue
  ready=1
  for w in $want; do [ -f "$stage/done/$w" ] || ready=0; done
  [ "$ready" = 1 ] || continue
  paths=()
  for w in $want; do paths+=("$stage/wheels/$target/$w"); done
  if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check --target "$dest" "${paths[@]}"; then
    echo "$(echo "$want" | wc -w) wheels" > "$stage/done/pip-$target"
    echo "  pip-installed $(echo "$want" | wc -w) wheels into $dest: $(echo "$want" | sed 's/-[0-9][^-]*-.*\.whl$//' | tr '\n' ' ')$(elapsed)"
    rm -rf "$stage/wheels/$target"
  else
    echo "  pip install of the $target wheels failed"; status=4
  fi
done
[ "$status" -eq 0 ] || exit "$status"
if [ "$k" -lt "$calls" ]; then
  echo "stage.sh $k/$calls done $(elapsed); next: bash benchmarks/gpu/stage.sh $((k + 1)) within 30 s"
  exit 0
fi
left=$(awk -F'\t' '$1 !~ /^#/ && $1 != "" {print $1}' "$stage/MANIFEST.tsv" | while read -r n; do [ -f "$stage/done/$n" ] || echo "$n"; done
  for t in site site-skyrl; do
    awk -F'\t' -v t="$t" '$1 !~ /^#/ && $2 == t && $1 ~ /\.whl$/ {found=1} END {exit !found}' "$stage/MANIFEST.tsv" && [ ! -f "$stage/done/pip-$t" ] && echo "pip-$t"
  done)
if [ -n "$left" ]; then echo "stage.sh $k/$calls: not installed: $left (were all calls 1..$calls staged on this machine?)"; exit 5; fi
write_env
if [ "${SKIP_IMPORT_CHECK:-0}" = 1 ]; then echo "stage.sh $k/$calls: import check skipped (SKIP_IMPORT_CHECK=1)"
elif ! import_check; then echo "stage.sh $k/$calls: import check failed $(elapsed)"; exit 6; fi
date -u +"staged %Y-%m-%dT%H:%M:%SZ" > "$stage/STAGED"
echo "stage.sh $k/$calls: everything staged $(elapsed)"
