#!/usr/bin/env bash
# pack-build: copies build/ without object files and static libraries into build-carry/, small enough to carry to
# the GPU machine, where scripts/gpu-check.sh moves it back to build/.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-carry
mkdir -p build-carry && tar -C build --exclude="*.o" --exclude="*.a" --exclude=Testing -cf - . | tar -C build-carry -xf -
du -sh build-carry
