# shellcheck shell=bash
# Sourced by the GPU run scripts (run_skyrl.sh, run_curve.sh), from the repository root, inside their logged group:
#   source benchmarks/gpu/stage_env.sh; stage_env || exit $?
# stage_env stages the kit's last call first when KIT_CALL=N is set and this machine is not staged yet
# (benchmarks/gpu/stage.sh), then enters the staged environment with SkyRL's pins in front. It returns 3 when that
# staging call failed and 4 when the machine holds no staged kit (a fresh machine: run the staging calls again).
stage_env() {
  if [ -n "${KIT_CALL:-}" ] && [ ! -f "$HOME/stage/STAGED" ]; then
    SKIP_IMPORT_CHECK=${SKIP_IMPORT_CHECK:-1} bash benchmarks/gpu/stage.sh "$KIT_CALL" || { echo "staging call $KIT_CALL failed"; return 3; }
  fi
  [ -f "$HOME/stage/env.sh" ] || { echo "not staged on this machine (a fresh machine?): run the staging calls 1..N again"; return 4; }
  # shellcheck disable=SC1091
  source "$HOME/stage/env.sh"
  export PYTHONPATH=$HPRL_SITE_SKYRL:$PYTHONPATH
}
