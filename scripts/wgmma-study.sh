#!/usr/bin/env bash
# wgmma-study: on a GPU machine with wgmma (H100 / H200), with build/ built (or carried as build-carry/), issue 12's
# measurements of the Hopper tensor-core family (igemm_wgmma) beside the mma.sync one (igemm_tc), in parts that each
# fit one call of the lent machine (about 600 s):
#
#   scripts/wgmma-study.sh OUT PART...
#     verify   the GPU verification of igemm_wgmma (its epilogue included), igemm_tc and sparse24_tc (OUT/verify;
#              VERIFY_TESTS, a ctest -R pattern, narrows it)
#     tune     every igemm_wgmma and igemm_tc candidate of the suite's layers at each batch, measured
#              (`tune --budget 0` into OUT/wgmma.sqlite)
#     bench    ours (both families, the tuned bests joining) against every cuDNN route in the same precision
#              (tensor-op math), in the same run (OUT/bench-<suite>-<precision>-<batches>/)
#   SHAPES (default shapes/cusnn.csv), PRECISION (fp16), BATCHES (1,8,32) and CANDIDATES (ours per family besides
#   the defaults and the tuned bests, default 2) choose what tune and bench run; DB, a tuning database, replaces
#   OUT/wgmma.sqlite. Draw reports with `convgen plot`.
set -uo pipefail
out=${1:?usage: scripts/wgmma-study.sh OUT PART...}
shift
[[ $# -gt 0 ]] || { echo "name the parts: verify tune bench" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
db=${DB:-$out/wgmma.sqlite}
shapes=${SHAPES:-shapes/cusnn.csv}
precision=${PRECISION:-fp16}
batches=${BATCHES:-1,8,32}
suite=$(basename "$shapes" .csv)
common=(--shapes "$shapes" --precision "$precision" --layout nhwc --act-sparsity 0 --batch "$batches")
status=0

for part in "$@"; do
  echo "== $part $(date -u +%FT%TZ)"
  case $part in
    verify)
      mkdir -p "$out/verify"
      CONVGEN_VERIFY_REPORT="$out/verify/verify-summary.txt" ctest --test-dir build -L gpu --output-on-failure \
        -R "${VERIFY_TESTS:-IgemmWgmmaGpu|IgemmTcGpu|Sparse24TcGpu}" > "$out/verify/ctest-gpu.log" 2>&1 || status=1
      tail -3 "$out/verify/ctest-gpu.log"
      ;;
    tune)
      "$convgen" tune "${common[@]}" --family igemm_wgmma,igemm_tc --budget 0 --db "$db" \
        > "$out/tune-$suite-$precision-$batches.log" 2>&1 || status=1
      tail -2 "$out/tune-$suite-$precision-$batches.log"
      ;;
    bench)
      report="$out/bench-$suite-$precision-$batches"
      "$convgen" bench "${common[@]}" --candidates "${CANDIDATES:-2}" --families igemm_wgmma,igemm_tc --db "$db" \
        --out "$report" > "$report.log" 2>&1 || status=1
      grep -h -E "^Geometric|^Network total" "$report"/*.md
      ;;
    *)
      echo "unknown part '$part', expected verify, tune or bench" >&2
      exit 2
      ;;
  esac
done
exit $status
