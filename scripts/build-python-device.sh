#!/usr/bin/env bash
# build-python-device: on the GPU machine, from the repository root with the carried build in place (build/prefix from
# scripts/pack-build.sh), builds the Python package for this machine's python3 (PyTorch's) into build/python-device:
# use it with PYTHONPATH=build/python-device. SQLite's header comes with the carry where this machine lacks it.
# The compiler is $CXX_FOR_PYTHON, else the system's /usr/bin/g++: it links the shared libstdc++ that PyTorch's process
# also loads. The lent machine's default $CXX (/opt/gcc) links libstdc++ statically, and such an extension crashed
# (SIGSEGV in ConvContext.conv) as soon as torch was imported beside it: two C++ runtimes in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
sqlite_hints=()
if [[ ! -f /usr/include/sqlite3.h ]]; then
  sqlite_hints=(-DSQLite3_INCLUDE_DIR="$PWD/build/prefix/include/sqlite3-carried"
                -DSQLite3_LIBRARY="$(ldconfig -p | sed -n 's/.*libsqlite3.so.0 .*=> //p' | head -1)")
fi
cxx=${CXX_FOR_PYTHON:-/usr/bin/g++}
[[ -x $cxx ]] || cxx=${CXX:-c++}
cmake -S python -B build/python-device -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PWD/build/prefix" -DPython_EXECUTABLE="$(command -v python3)" -Wno-dev "${sqlite_hints[@]}" \
  -DCONVGEN_NVRTC_WORKER="$PWD/build/tools/convgen/convgen-nvrtc-worker"
cmake --build build/python-device
