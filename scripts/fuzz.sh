#!/usr/bin/env bash
# fuzz: builds the libFuzzer targets (CMake preset 'fuzz': clang, ASan + UBSan, folder build-fuzz) and runs each for
# SECONDS on its checked-in seed corpus (tests/fuzz/corpus/<target>), printing executions and crashes per target;
# with RUNS, each stops at RUNS executions or SECONDS, whichever comes first.
#   scripts/fuzz.sh all 300        every target for 5 minutes      scripts/fuzz.sh shapes 60
#   scripts/fuzz.sh all 3600 10000000   issue 17's bar: 10^7 executions or an hour per target
# New inputs stay in build-fuzz/tests/fuzz/found/<target>; a crashing input is saved as
# build-fuzz/tests/fuzz/crashes/<target>-crash-<sha1> (rerun: build-fuzz/tests/fuzz/fuzz_<target> FILE). Exits 1 when
# any target crashed. CONVGEN_FUZZ_PRESET=asan uses the asan build (build-asan) instead, which has the targets too.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 2 || $# > 3)) || ! [[ $2 =~ ^[0-9]+$ ]] || ! [[ ${3:-0} =~ ^[0-9]+$ ]]; then
  echo "usage: $0 TARGET|all SECONDS [RUNS] (targets: $(ls tests/fuzz/corpus | tr '\n' ' '))" >&2
  exit 2
fi
runs=${3:--1}  # libFuzzer's -runs: -1 is no limit
preset=${CONVGEN_FUZZ_PRESET:-fuzz}
build=build-$preset
if [[ $1 == all ]]; then
  targets=($(ls tests/fuzz/corpus))
elif [[ -d tests/fuzz/corpus/$1 ]]; then
  targets=("$1")
else
  echo "$0: unknown target '$1', expected all or one of: $(ls tests/fuzz/corpus | tr '\n' ' ')" >&2
  exit 2
fi

export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
cmake --preset "$preset" >/dev/null
cmake --build "$build" --target convgen_fuzzers

out=$build/tests/fuzz
mkdir -p "$out/logs" "$out/crashes"
printf '%-12s %12s %8s  %s\n' target executions crashes "log / crashing input"
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$out/found/$t"
  log=$out/logs/$t.log
  before=$(find "$out/crashes" -name "$t-*" | sort)
  status=0
  "$out/fuzz_$t" -max_total_time="$2" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -print_funcs=0 \
    -artifact_prefix="$out/crashes/$t-" "$out/found/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  new=$(comm -13 <(echo "$before") <(find "$out/crashes" -name "$t-*" | sort) | grep . || true)
  crashes=$(echo -n "$new" | grep -c . || true)
  where=$log
  if ((status != 0)); then
    failed=1
    ((crashes > 0)) || crashes=1  # a failure that saved no input (e.g. the target did not start): see the log
    where="$log $new"
  fi
  printf '%-12s %12s %8s  %s\n' "$t" "${executions:-?}" "$crashes" "$where"
done
exit $failed
