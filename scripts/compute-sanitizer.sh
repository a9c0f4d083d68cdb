#!/usr/bin/env bash
# compute-sanitizer: on a GPU machine, runs every family's verification on the edge-case corpus (the GPU test
# GpuVerify.EveryFamilyAndRepresentativeConfigurationIsCorrectOnTheEdgeCaseCorpus: each family's representative
# configurations on every edge case, outputs poisoned) under compute-sanitizer's memcheck, racecheck, initcheck and
# synccheck, and writes OUT/summary.md with each tool's error count (0 is the bar) and wall time, and each tool's log.
# Usage: scripts/compute-sanitizer.sh OUT [TOOL...]   (default: all four; with build/ built elsewhere and carried)
# CONVGEN_SANITIZER_FILTER: another gtest filter; CONVGEN_SANITIZER_TIMEOUT: seconds per tool (default 1800).
set -uo pipefail
out=${1:?usage: scripts/compute-sanitizer.sh OUT [memcheck|racecheck|initcheck|synccheck...]}
shift
tools=("$@")
((${#tools[@]})) || tools=(memcheck racecheck initcheck synccheck)
mkdir -p "$out"
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=/tmp/convgen-cache
filter=${CONVGEN_SANITIZER_FILTER:-GpuVerify.EveryFamilyAndRepresentativeConfigurationIsCorrectOnTheEdgeCaseCorpus}
limit=${CONVGEN_SANITIZER_TIMEOUT:-1800}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
{
  echo "# compute-sanitizer over every family on the edge-case corpus"
  echo
  echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $("$sanitizer" --version | tail -1)."
  echo "Command: \`scripts/compute-sanitizer.sh OUT ${tools[*]}\` (gtest filter \`$filter\`)"
  echo
  echo "| tool | errors | test result | wall s |"
  echo "|---|---|---|---|"
} > "$out/summary.md"
for tool in "${tools[@]}"; do
  extra=()
  [[ $tool == racecheck ]] && extra=(--racecheck-report all)
  start=$(date +%s)
  timeout "$limit" "$sanitizer" --tool "$tool" "${extra[@]}" --print-limit 50 --log-file "$out/$tool.log" \
    build/tests/convgen_gpu_tests --gtest_filter="$filter" > "$out/$tool.gtest.log" 2>&1
  code=$?
  wall=$(($(date +%s) - start))
  # memcheck, initcheck, synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed
  # (N errors, W warnings)".
  errors=$(sed -n -e 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' -e 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' \
    "$out/$tool.log" | tail -1)
  result=$([[ $code == 0 ]] && echo passed || { [[ $code == 124 ]] && echo "timed out after ${limit} s" || echo "exit $code"; })
  echo "| $tool | ${errors:-unknown} | $result | $wall |" >> "$out/summary.md"
  [[ $code == 0 && ${errors:-1} == 0 ]] || status=1
done
cat "$out/summary.md"
exit $status
