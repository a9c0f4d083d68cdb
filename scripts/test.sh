#!/usr/bin/env bash
# test: the README's test command: sets up, builds and runs every test (GPU tests skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --preset release --output-on-failure -j "$(nproc)" "$@"
