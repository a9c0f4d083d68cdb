#!/usr/bin/env bash
# pack-build: packs build/ without object files, precompiled headers and static libraries (but with the installed
# libconvgen.a), stripped, as one xz archive build-carry/build.tar.xz (about 5 MiB) to carry to the GPU machine, where
# scripts/use-carried-build.sh (sourced by gpu-check.sh and the study scripts) unpacks it as build/. The ONNX importer
# and its tests stay behind: the GPU machine has no libonnx, and `convgen import onnx` there says the importer is not
# built. The host-only test binaries, the install-consumer test and this machine's Python extension stay behind too
# (the GPU machine runs the `gpu` label and builds its own extension).
# Usage: scripts/pack-build.sh [--without-library]: --without-library also leaves out the installed library and what
# the GPU machine's `gpu` tests, benches and tuning never run (the nvrtc tier, the examples, the template scanner, the
# compile-latency tools, ninja's files); the Python tests and the README example's test then cannot run there.
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
# Symbol tables only: the binaries carry no debug information, and a stripped one runs the same (about 1.2 MiB less).
find build-carry -type f -perm -u+x -exec sh -c '[ "$(head -c 4 "$1" | tail -c 3)" = ELF ] && strip "$1"' _ {} \;
if ((with_library)); then
  cmake --install build --prefix build-carry/prefix --component library >/dev/null
  mkdir -p build-carry/prefix/include/sqlite3-carried && cp /usr/include/sqlite3.h build-carry/prefix/include/sqlite3-carried/
fi
# One xz archive in build-carry/: the binaries compress to about a third, leaving room under the 64 MiB a lent call
# carries; scripts/use-carried-build.sh unpacks it.
tar -C build-carry -cf - --remove-files . | xz -T0 -6 > build-carry.tar.xz
rm -rf build-carry && mkdir build-carry && mv build-carry.tar.xz build-carry/build.tar.xz
du -sh build-carry
