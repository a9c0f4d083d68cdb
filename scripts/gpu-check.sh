#!/usr/bin/env bash
# gpu-check: on a GPU machine, with build/ built elsewhere and carried: runs the GPU tests and the main job's GPU
# part (verify every layer of a suite), writing logs to OUT.  Usage: scripts/gpu-check.sh OUT [ctest args...]
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUT [ctest args...]}
shift
mkdir -p "$out"
cd "$(dirname "$0")/.."

source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=/tmp/convgen-cache
convgen=build/tools/convgen/convgen
status=0
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
  ldd "$convgen" | grep -E "not found|nvrtc|sqlite|gomp|stdc" || true
} 2>&1 | tee "$out/environment.txt"
export CONVGEN_VERIFY_REPORT="$out/verify-summary.txt"
rm -f "$CONVGEN_VERIFY_REPORT"
ctest --test-dir build -L gpu --output-on-failure --timeout 1200 "$@" 2>&1 | tee "$out/ctest-gpu.log" || status=1
"$convgen" gpu detect --out "$out/gpu-detected.json" || status=1
for suite in ${CONVGEN_RUN_SUITES:-shapes/cusnn.csv shapes/resnet50.csv}; do
  name=$(basename "$suite" .csv)
  "$convgen" run --shapes "$suite" --all-layers > "$out/run-$name.log" 2>&1 || status=1
  grep -c PASS "$out/run-$name.log" | xargs echo "$name: layers passed:"
done
# The Python package, built here for this machine's python3 (PyTorch's) against the carried C++ library
# (build/prefix, scripts/build-python-device.sh), then every pytest tier: host and gpu (edge cases against
# torch.nn.functional, a side stream, a converted ResNet-50, tune, the README example).
if python3 -c "import nanobind, pytest, torch" 2>/dev/null && [[ -d build/prefix ]]; then
  { scripts/build-python-device.sh &&
    PYTHONPATH=build/python-device python3 -X faulthandler -m pytest -v -p no:cacheprovider -rs python/tests; } \
    > "$out/pytest.log" 2>&1 || status=1
  tail -5 "$out/pytest.log"
else
  echo "python3 here has no nanobind, pytest or torch (or no build/prefix was carried): the Python tests did not run" |
    tee "$out/pytest.log"
fi
# The per-family tally the GPU verification tests wrote, for the record.
cat "$out/verify-summary.txt" 2>/dev/null
exit $status
