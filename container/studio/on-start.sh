#!/usr/bin/env bash
# SageMaker Studio (JupyterLab space) lifecycle configuration for hyperpod-rl.
#
# What it does, each step only when needed (it is safe to run on every start):
#   1. installs the widget frontends this project needs into the Jupyter *server* environment
#      (Studio: /opt/conda): anywidget and jupyterlab_widgets, and the project's JupyterLab
#      extension when HPRL_LABEXTENSION names it (a wheel path or URL, or a PyPI requirement);
#      It also writes the extension's settings this set-up implies into JupyterLab's
#      overrides.json (<server prefix>/share/jupyter/lab/settings/overrides.json): the kernel
#      hyperpod-rl code runs in (HPRL_KERNEL_NAME) and the CLI path the hints show
#      ($HPRL_VENV/bin/hyperpod-rl);
#   2. restarts the Jupyter server the supported way (restart-jupyter-server) when step 1
#      changed anything, so JupyterLab loads the new frontends;
#   3. creates a virtual environment under the user's home, installs hyperpod-rl into it and
#      registers it as the Jupyter kernel "hyperpod-rl", so its Ray and torch never replace the
#      server environment's (Studio's base environment carries AWS's Ray tools on Ray 2.55);
#      then links its hyperpod-rl command into HPRL_CLI_DIR, which is on the PATH of Studio's
#      terminals, so `hyperpod-rl ...` works there as the sidebar's hints say.
# Everything it does goes to the log (default ~/.hyperpod-rl/on-start.log) and to stdout.
#
# Settings (environment variables; the defaults fit Studio):
#   HPRL_SERVER_PREFIX    server environment prefix                 (/opt/conda)
#   HPRL_SERVER_PIP_ARGS  extra pip arguments for step 1             ("")
#   HPRL_LABEXTENSION     hyperpod-rl-jupyterlab wheel path/URL or PyPI requirement ("": skip)
#   HPRL_VENV             kernel environment                         ($HOME/.venvs/hyperpod-rl)
#   HPRL_PYTHON           interpreter that creates it                (python3.12, else the server's python3)
#   HPRL_PACKAGE          what to install into it                    ("hyperpod-rl[studio]")
#   HPRL_PIP_ARGS         extra pip arguments for HPRL_PACKAGE       ("")
#   HPRL_KERNEL_NAME      kernel name / display name                 (hyperpod-rl / "Python 3.12 (hyperpod-rl)")
#   HPRL_CLI_DIR          where the hyperpod-rl command is linked    (<server prefix>/bin)
#   HPRL_RESTART_CMD      server restart command                     (restart-jupyter-server)
#   HPRL_BACKGROUND       1: run step 3 in the background, so a slow install (torch, Ray) cannot
#                         hold up the space's start; 0: wait for it  (1)
#   HPRL_LOG              log file                                   ($HOME/.hyperpod-rl/on-start.log)
set -euo pipefail

SERVER_PREFIX="${HPRL_SERVER_PREFIX:-/opt/conda}"
SERVER_PIP_ARGS="${HPRL_SERVER_PIP_ARGS:-}"
LABEXTENSION="${HPRL_LABEXTENSION:-}"
VENV="${HPRL_VENV:-$HOME/.venvs/hyperpod-rl}"
PACKAGE="${HPRL_PACKAGE:-hyperpod-rl[studio]}"
PIP_ARGS="${HPRL_PIP_ARGS:-}"
KERNEL_NAME="${HPRL_KERNEL_NAME:-hyperpod-rl}"
KERNEL_DISPLAY="${HPRL_KERNEL_DISPLAY:-Python 3.12 (hyperpod-rl)}"
RESTART_CMD="${HPRL_RESTART_CMD:-restart-jupyter-server}"
CLI_DIR="${HPRL_CLI_DIR:-$SERVER_PREFIX/bin}"
BACKGROUND="${HPRL_BACKGROUND:-1}"
LOG="${HPRL_LOG:-$HOME/.hyperpod-rl/on-start.log}"
SERVER_PY="$SERVER_PREFIX/bin/python"

mkdir -p "$(dirname "$LOG")"

log() {
  printf '%s hyperpod-rl on-start: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$LOG"
}

die() {
  log "FAILED: $*"
  exit 1
}

# A fingerprint of an environment's installed distributions: equal before and after = nothing changed.
fingerprint() {
  "$1" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | sort | cksum | cut -d' ' -f1
}

pick_python() {
  if [[ -n "${HPRL_PYTHON:-}" ]]; then
    printf '%s\n' "$HPRL_PYTHON"
  elif command -v python3.12 >/dev/null 2>&1; then
    command -v python3.12
  elif [[ -x "$SERVER_PREFIX/bin/python3" ]]; then
    printf '%s\n' "$SERVER_PREFIX/bin/python3"
  else
    command -v python3
  fi
}

# ----- 1. widget frontends in the server environment -------------------------------------------
server_frontends() {
  [[ -x "$SERVER_PY" ]] || die "no Python at $SERVER_PY: set HPRL_SERVER_PREFIX to the Jupyter server's environment"
  local before after
  local -a extra=() wanted=("anywidget>=0.9" "jupyterlab_widgets>=3.0")
  if [[ -n "$SERVER_PIP_ARGS" ]]; then
    read -r -a extra <<<"$SERVER_PIP_ARGS"
  fi
  if [[ -n "$LABEXTENSION" ]]; then
    wanted+=("$LABEXTENSION")
  else
    log "no HPRL_LABEXTENSION given: the hyperpod-rl JupyterLab extension is not installed (optional)"
  fi
  before="$(fingerprint "$SERVER_PY")"
  log "server environment $SERVER_PREFIX: ensuring ${wanted[*]}"
  "$SERVER_PY" -m pip install --quiet --disable-pip-version-check "${extra[@]}" "${wanted[@]}" >>"$LOG" 2>&1 \
    || die "pip install into $SERVER_PREFIX failed (see $LOG)"
  after="$(fingerprint "$SERVER_PY")"
  local settings_changed=1
  if write_overrides; then settings_changed=0; fi
  if [[ "$before" == "$after" ]]; then
    log "server environment unchanged (frontends already installed)"
    return "$settings_changed"
  fi
  log "server environment changed: installed or upgraded ${wanted[*]}"
  return 0
}

# The extension's settings this set-up implies, merged into JupyterLab's overrides.json (other
# keys and plug-ins kept). Returns 0 when the file changed.
write_overrides() {
  local file="$SERVER_PREFIX/share/jupyter/lab/settings/overrides.json" result
  result="$("$SERVER_PY" - "$file" "$KERNEL_NAME" "$VENV/bin/hyperpod-rl" <<'PY'
import json, pathlib, sys
path, kernel, cli = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
text = path.read_text() if path.is_file() else ""
data = json.loads(text) if text.strip() else {}
key = "hyperpod-rl-jupyterlab:plugin"
old = data.get(key) or {}
new = {**old, "kernelName": kernel, "cliPath": cli}
if new != old:
    data[key] = new
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
print("changed" if new != old else "unchanged")
PY
)" || die "writing the extension's settings into $file failed"
  if [[ "$result" == "changed" ]]; then
    log "settings: kernel $KERNEL_NAME and CLI $VENV/bin/hyperpod-rl written to $file"
    return 0
  fi
  log "settings already in $file"
  return 1
}

# ----- 2. restart the Jupyter server --------------------------------------------------------------
restart_server() {
  if command -v "$RESTART_CMD" >/dev/null 2>&1; then
    log "restarting the Jupyter server ($RESTART_CMD) so JupyterLab loads the new frontends"
    "$RESTART_CMD" >>"$LOG" 2>&1 || log "WARNING: $RESTART_CMD failed; restart the space to load the frontends"
  else
    log "WARNING: $RESTART_CMD not found (not a Studio space?): restart the Jupyter server yourself"
  fi
}

# ----- 3. the kernel environment ------------------------------------------------------------------
kernel_env() {
  local python before after spec
  local -a extra=()
  if [[ -n "$PIP_ARGS" ]]; then
    read -r -a extra <<<"$PIP_ARGS"
  fi
  if [[ -x "$VENV/bin/python" ]]; then
    log "kernel environment $VENV exists"
  else
    python="$(pick_python)"
    [[ -n "$python" ]] || die "no Python 3 found: set HPRL_PYTHON"
    log "creating kernel environment $VENV with $python"
    mkdir -p "$(dirname "$VENV")"
    "$python" -m venv "$VENV" >>"$LOG" 2>&1 || die "$python -m venv $VENV failed (see $LOG)"
  fi
  before="$(fingerprint "$VENV/bin/python")"
  log "installing ipykernel and $PACKAGE into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "ipykernel>=6.29" >>"$LOG" 2>&1 \
    || die "pip install ipykernel into $VENV failed (see $LOG)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${extra[@]}" "$PACKAGE" >>"$LOG" 2>&1 \
    || die "pip install $PACKAGE into $VENV failed (see $LOG)"
  after="$(fingerprint "$VENV/bin/python")"
  if [[ "$before" == "$after" ]]; then
    log "kernel environment unchanged"
  else
    log "kernel environment updated"
  fi
  spec="$("$VENV/bin/python" -m jupyter kernelspec list --json 2>/dev/null | grep -c "\"$KERNEL_NAME\"" || true)"
  # ipykernel stages the spec in a mkdtemp(suffix="_kernels") folder and removes only the spec inside it
  # (ipykernel/kernelspec.py install), so each install would leave an empty folder in /tmp: stage it
  # in a folder of ours, removed here.
  local stage
  stage="$(mktemp -d)"
  TMPDIR="$stage" "$VENV/bin/python" -m ipykernel install --user --name "$KERNEL_NAME" --display-name "$KERNEL_DISPLAY" >>"$LOG" 2>&1 \
    || { rm -rf "$stage"; die "registering the kernel $KERNEL_NAME failed (see $LOG)"; }
  rm -rf "$stage"
  if [[ "$spec" == "0" ]]; then
    log "registered the Jupyter kernel '$KERNEL_DISPLAY' ($KERNEL_NAME): pick it in the notebook's kernel menu"
  else
    log "Jupyter kernel $KERNEL_NAME already registered (refreshed)"
  fi
  link_cli
  log "kernel environment ready: $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])') at $VENV"
}

# `hyperpod-rl` on the terminal's PATH: a link in CLI_DIR to the kernel environment's command.
link_cli() {
  local target="$VENV/bin/hyperpod-rl" link="$CLI_DIR/hyperpod-rl"
  [[ -x "$target" ]] || die "$target is missing: $PACKAGE did not install the hyperpod-rl command"
  if [[ -e "$link" && ! -L "$link" ]]; then
    log "WARNING: $link exists and is not a link; not replaced (use $target)"
    return 0
  fi
  mkdir -p "$CLI_DIR"
  ln -sfn "$target" "$link" || die "linking $link -> $target failed"
  log "hyperpod-rl command: $link -> $target"
}

main() {
  log "start (server $SERVER_PREFIX, kernel env $VENV)"
  if server_frontends; then
    restart_server
  fi
  if [[ "$BACKGROUND" == "1" ]]; then
    log "installing the kernel environment in the background; follow it in $LOG"
    nohup bash -c "$(declare -f log die fingerprint pick_python kernel_env link_cli); $(declare -p SERVER_PREFIX VENV PACKAGE PIP_ARGS KERNEL_NAME KERNEL_DISPLAY LOG CLI_DIR); kernel_env" >/dev/null 2>&1 &
  else
    kernel_env
  fi
  log "done"
}

main "$@"
