#!/usr/bin/env bash
# test: the README's test command: sets up, builds and runs every test (GPU tests skip without a GPU), then every
# host test again under ASan + UBSan and each fuzz target for a few seconds (preset asan, folder build-asan;
# CONVGEN_SKIP_SANITIZERS=1 skips that part). Within 30 minutes on CI's 2 cores, the NVRTC sweeps compile a third of
# the configurations of their second architecture or precision and the sanitizers skip three replays of published
# measurements; scripts/compile-sweep.sh runs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --preset release --output-on-failure -j "$(nproc)" "$@"
if [[ ${CONVGEN_SKIP_SANITIZERS:-0} != 1 ]]; then
  cmake --preset asan >/dev/null
  cmake --build build-asan --target convgen_host_tests convgen_fuzzers
  ctest --preset asan -j "$(nproc)"
  ctest --preset fuzz -j "$(nproc)"
fi
