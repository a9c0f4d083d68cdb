#!/usr/bin/env bash
# build: configures and builds into build/ (CMake preset 'release'): every target, tests included, or only the
# targets named (scripts/build.sh convgen).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
cmake --preset release >/dev/null
cmake --build --preset release ${1:+--target "$@"}
