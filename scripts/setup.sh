#!/usr/bin/env bash
# setup: installs the Debian packages convgen builds with (run as root), checks the CUDA toolkit is there, and makes
# the project's Python environment .venv (nanobind, scikit-build-core, pytest from PyPI; Debian's numpy and
# matplotlib through --system-site-packages), which the build uses for the Python package and its tests.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ git libfmt-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libxxhash-dev zlib1g-dev
          libgtest-dev libclang-cpp14-dev libclang-14-dev llvm-14-dev python3-matplotlib libonnx-dev libprotobuf-dev
          python3-dev python3-venv python3-pip python3-numpy
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

python_packages=("nanobind>=2.0" "scikit-build-core>=0.10" "pytest")
if ! .venv/bin/python3 -c "import nanobind, scikit_build_core, pytest" 2>/dev/null; then
  echo "setup: making .venv with ${python_packages[*]} (PyPI)" >&2
  /usr/bin/python3 -m venv --system-site-packages .venv
  if ! .venv/bin/pip install -q --disable-pip-version-check "${python_packages[@]}"; then
    echo "setup: warning: pip could not install ${python_packages[*]}: the Python package and its tests are not" \
         "built (everything else is)" >&2
  fi
fi
