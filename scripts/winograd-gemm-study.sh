#!/usr/bin/env bash
# winograd-gemm-study: on a GPU machine, with build/ built (or carried as build-carry/), issue 13's check of the
# winograd_gemm family (three launches around a batched SGEMM) and of pointwise (1x1 layers as one SGEMM), each PART
# sized for one lent call, writing under OUT:
#   verify   every winograd_gemm and pointwise candidate of every edge-case corpus layer they serve, verified against
#            the float64 reference by the tuner before it is timed, without and with a fused epilogue (verify/)
#   cusnn    winograd_gemm tuned on the cuSNN layers at batch 8 and 32 (every candidate measured), then
#            `convgen bench` of those layers against every cuDNN route with the tuned choice among our candidates
#            (cusnn-n8-32/; BATCHES overrides 8,32 and names the folder)
#   resnet50 the same on resnet50's layers (resnet50-n8-32/)
#   pointwise
#            the 1x1 layers' families side by side: pointwise (1x1 layers only) and igemm (every layer) both tuned
#            exhaustively at batch 1 and 8, then benched with those choices (pointwise-<suite>-n1-8/); SUITES
#            (default shapes/resnet50.csv; densenet121's many layers want a call of their own) and BATCHES override
#   suites   issue 13's per-suite check: FAMILIES (default winograd_gemm,pointwise,igemm, the dense FP32 families
#            whose measurements the defaults cannot stand for) tuned exhaustively on each of SUITES (default
#            shapes/resnet20_cifar.csv) at BATCHES (default 1,8), then benched with those choices against every cuDNN
#            route (tuned-<suite>-n<batches>/); each suite in a call of its own where tune and bench together pass
#            600 s (densenet121 at two batches does). GUIDED (e.g. igemm,direct) names families tuned after those
#            the model's way, GUIDED_BUDGET (default 10) candidates a layer, into the same database (the faster
#            choice stays), for families too large to measure whole
# Each step runs under `timeout` (STEP_TIMEOUT, default 270 s) so that a slow one leaves the others' files.
# Usage: scripts/winograd-gemm-study.sh OUT PART...
set -uo pipefail
out=${1:?usage: scripts/winograd-gemm-study.sh OUT PART...}
shift
[[ $# -gt 0 ]] || {
  echo "winograd-gemm-study: name a part: verify cusnn resnet50 pointwise suites" >&2
  exit 2
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
limit=${STEP_TIMEOUT:-270}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > "$out/environment.txt" 2>&1
git rev-parse --short HEAD >> "$out/environment.txt" 2>/dev/null

# tune_and_bench SUITE [FAMILIES [PREFIX]]: tune FAMILIES (default winograd_gemm) exhaustively into a fresh database,
# list it, bench with it.
tune_and_bench() {
  local suite=$1 families=${2:-winograd_gemm} batches=${BATCHES:-8,32}
  local dir="$out/${3:-}$(basename "$1" .csv)-n${batches//,/-}"
  mkdir -p "$dir"
  rm -f "$dir/tuned.sqlite"
  timeout "$limit" "$convgen" tune --shapes "$suite" --batch "$batches" --family "$families" --budget 0 \
    --db "$dir/tuned.sqlite" > "$dir/tune.log" 2>&1 || status=1
  if [[ -n ${GUIDED:-} ]]; then
    timeout "$limit" "$convgen" tune --shapes "$suite" --batch "$batches" --family "$GUIDED" \
      --budget "${GUIDED_BUDGET:-10}" --force --db "$dir/tuned.sqlite" > "$dir/tune-guided.log" 2>&1 || status=1
  fi
  "$convgen" db show --db "$dir/tuned.sqlite" > "$dir/measurements.txt" 2>&1 || status=1
  timeout "$limit" "$convgen" bench --shapes "$suite" --batch "$batches" --db "$dir/tuned.sqlite" --out "$dir" \
    > "$dir/bench.log" 2>&1 || status=1
}

for part in "$@"; do
  case $part in
    verify)
      mkdir -p "$out/verify"
      for epilogue in none alpha:1.5+bias+add:0.5+relu6; do
        rm -f "$out/verify/$epilogue.sqlite"
        timeout "$limit" "$convgen" tune --shapes shapes/edge_cases.csv --family winograd_gemm,pointwise --budget 0 \
          --epilogue "$epilogue" --db "$out/verify/$epilogue.sqlite" > "$out/verify/tune-$epilogue.log" 2>&1 ||
          status=1
        grep -oE "[0-9]+ measured of [0-9]+, [0-9]+ failed" "$out/verify/tune-$epilogue.log" |
          awk -v e="$epilogue" '{m += $1; c += $4; f += $5}
            END {print e ": " m " measured of " c " candidates, " f " failed"}'
      done
      ;;
    cusnn) tune_and_bench shapes/cusnn.csv ;;
    resnet50) tune_and_bench shapes/resnet50.csv ;;
    pointwise)
      for suite in ${SUITES:-shapes/resnet50.csv}; do
        BATCHES=${BATCHES:-1,8} tune_and_bench "$suite" pointwise,igemm pointwise-
      done
      ;;
    suites)
      for suite in ${SUITES:-shapes/resnet20_cifar.csv}; do
        BATCHES=${BATCHES:-1,8} tune_and_bench "$suite" "${FAMILIES:-winograd_gemm,pointwise,igemm}" tuned-
      done
      ;;
    *)
      echo "winograd-gemm-study: unknown part '$part' (verify, cusnn, resnet50, pointwise, suites)" >&2
      status=2
      ;;
  esac
done
exit $status
