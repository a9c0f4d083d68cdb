#!/usr/bin/env bash
# setup: installs the Debian packages convgen builds with (run as root), and checks the CUDA toolkit is there.
set -euo pipefail

packages=(cmake ninja-build g++ git libfmt-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libgtest-dev
          libclang-cpp14-dev libclang-14-dev llvm-14-dev python3-matplotlib libonnx-dev libprotobuf-dev
          clang-14 libclang-rt-14-dev libomp-14-dev)  # the last three: presets asan and fuzz (libFuzzer, sanitizers)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: packages are missing and this is not root: run 'sudo $0' or install them: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_root=${CUDA_HOME:-/usr/local/cuda}
for f in include/nvrtc.h include/cuda.h; do
  if [[ ! -f "$cuda_root/$f" ]]; then
    echo "setup: $cuda_root/$f not found: convgen needs the CUDA toolkit (NVRTC); set CUDA_HOME to its folder" >&2
    exit 1
  fi
done
