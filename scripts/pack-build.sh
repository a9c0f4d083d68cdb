#!/usr/bin/env bash
# pack-build: copies build/ without object files, precompiled headers and static libraries (but with the installed
# libconvgen.a) into build-carry/, small enough to carry to the GPU machine, where scripts/gpu-check.sh moves it back to build/. The ONNX importer and its tests stay behind: the
# GPU machine has no libonnx, and `convgen import onnx` there says the importer is not built. The host-only test
# binaries, the install-consumer test and this machine's Python extension stay behind too (the GPU machine runs the
# `gpu` label and builds its own extension): the carry and the tracked tree must fit the lent machine's 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-carry
mkdir -p build-carry && tar -C build --exclude="*.o" --exclude="*.a" --exclude="*.gch" --exclude="*.pch" --exclude=Testing --exclude=convgen-onnx-import \
  --exclude="convgen_host_*_tests" \
  --exclude=./tests/install_consumer --exclude=./python --exclude="./tests/fuzz/fuzz_*" -cf - . | tar -C build-carry -xf -
# The installed C++ library (archive, headers, CMake package) under build/prefix: the GPU machine builds the Python
# extension against it for its own Python (scripts/gpu-check.sh).
cmake --install build --prefix build-carry/prefix --component library >/dev/null
mkdir -p build-carry/prefix/include/sqlite3-carried && cp /usr/include/sqlite3.h build-carry/prefix/include/sqlite3-carried/
du -sh build-carry
