#!/usr/bin/env bash
# pack-build: copies build/ without object files, precompiled headers and static libraries (but with the installed
# libconvgen.a) into build-carry/, small enough to carry to the GPU machine, where scripts/gpu-check.sh moves it back
# to build/. The ONNX importer and its tests stay behind: the GPU machine has no libonnx, and `convgen import onnx`
# there says the importer is not built. The host-only test
# binaries, the install-consumer test and this machine's Python extension stay behind too (the GPU machine runs the
# `gpu` label and builds its own extension): the carry and the tracked tree must fit the lent machine's 64 MiB.
# Usage: scripts/pack-build.sh [--without-library]: --without-library leaves the installed library out (13 MiB) when
# the call does not build the Python extension and the tracked tree leaves too little room under the limit, and with
# it what the GPU machine's `gpu` tests, benches and tuning never run: the nvrtc tier (its binary and test list), the
# examples, the template scanner, the compile-latency tools and ninja's files (about 13.4 MiB carried in all).
set -euo pipefail
with_library=1
[[ ${1:-} == --without-library ]] && with_library=0
cd "$(dirname "$0")/.."
rm -rf build-carry
mkdir -p build-carry && tar -C build --exclude="*.o" --exclude="*.a" --exclude="*.gch" --exclude="*.pch" --exclude=Testing --exclude=convgen-onnx-import \
  --exclude="convgen_host_*_tests" \
  --exclude=./tests/install_consumer --exclude=./python --exclude="./tests/fuzz/fuzz_*" -cf - . | tar -C build-carry -xf -
# The installed C++ library (archive, headers, CMake package) under build/prefix: the GPU machine builds the Python
# extension against it for its own Python (scripts/gpu-check.sh).
if ((!with_library)); then
  rm -rf build-carry/examples build-carry/.ninja_deps build-carry/.ninja_log build-carry/build.ninja \
    "build-carry/tests/convgen_nvrtc_tests[1]_tests.cmake" build-carry/tests/convgen_nvrtc_tests \
    build-carry/tools/convgen/convgen-template-scan build-carry/tools/convgen/convgen-cache-latency \
    build-carry/tools/convgen/convgen-compile-throughput
fi
if ((with_library)); then
  cmake --install build --prefix build-carry/prefix --component library >/dev/null
  mkdir -p build-carry/prefix/include/sqlite3-carried && cp /usr/include/sqlite3.h build-carry/prefix/include/sqlite3-carried/
fi
du -sh build-carry
