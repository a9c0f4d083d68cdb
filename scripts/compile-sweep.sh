#!/usr/bin/env bash
# compile-sweep: the NVRTC tests with every configuration of every sweep compiled (CI compiles every configuration in
# a sweep's first architecture or precision and a third in the others: tests/support/compile_sweep.hpp), and every host
# test under ASan + UBSan (CI leaves out three replays of published measurements: CMakePresets.json, preset asan).
# About 15 minutes more than CI on 2 cores. Arguments go to the NVRTC ctest run (say -R IgemmWgmma).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
CONVGEN_COMPILE_SWEEP=full ctest --preset nvrtc -j "$(nproc)" "$@"
cmake --preset asan >/dev/null
cmake --build build-asan --target convgen_host_tests
ctest --preset asan-all -j "$(nproc)"
