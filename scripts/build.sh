#!/usr/bin/env bash
# build: configures and builds convgen and its tests into build/ (CMake preset 'release').
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
cmake --preset release >/dev/null
cmake --build --preset release
