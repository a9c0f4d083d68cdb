#!/usr/bin/env bash
# sparse24-study: on a GPU machine, with build/ built (or carried as build-carry/), issue 14's measurements of the 2:4
# tensor-core family (sparse24_tc) on resnet50 in fp16, NHWC, with filters pruned to 2:4, in parts that each fit one
# call of the lent machine (about 600 s):
#
#   scripts/sparse24-study.sh OUT PART...
#     verify     the family's GPU verification: the corpus in fp16 and bf16 with 2:4, 2:4 with odd channels zero and
#                all-zero filters, every enumerated configuration on the cusnn layers, split-K (OUT/verify)
#     tune-n8    every sparse24_tc and igemm_tc candidate of resnet50 at batch 8 on the same 2:4 filters, measured
#     tune-n32   the same at batch 32 (`tune --budget 0`, both into OUT/sp24.sqlite)
#     bench      resnet50 at batch 8 and 32: ours (sparse24_tc and the dense igemm_tc on the same filter, the tuned
#                bests joining) against every cuDNN FP16 route (dense, tensor-op math), in the same run. BATCHES
#                (default 8,32) and CANDIDATES (ours per family besides the defaults and the tuned bests, default 0)
#                narrow it to fit one call; each batch list reports to OUT/bench-<batches>/
#   Reports go to OUT/<part>/; draw them with `convgen plot`.
set -uo pipefail
out=${1:?usage: scripts/sparse24-study.sh OUT PART...}
shift
[[ $# -gt 0 ]] || { echo "name the parts: verify tune-n8 tune-n32 bench" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
db="$out/sp24.sqlite"
common=(--shapes shapes/resnet50.csv --precision fp16 --layout nhwc --weight-sparsity 2:4 --act-sparsity 0)
status=0

for part in "$@"; do
  echo "== $part $(date -u +%FT%TZ)"
  case $part in
    verify)
      mkdir -p "$out/verify"
      CONVGEN_VERIFY_REPORT="$out/verify/verify-summary.txt" ctest --test-dir build -L gpu --output-on-failure \
        -R "Sparse24TcGpu" > "$out/verify/ctest-gpu.log" 2>&1 || status=1
      tail -3 "$out/verify/ctest-gpu.log"
      ;;
    tune-n8 | tune-n32)
      "$convgen" tune "${common[@]}" --batch "${part#tune-n}" --family sparse24_tc,igemm_tc --budget 0 --db "$db" \
        > "$out/$part.log" 2>&1 || status=1
      tail -2 "$out/$part.log"
      ;;
    bench)
      batches=${BATCHES:-8,32}
      "$convgen" bench "${common[@]}" --batch "$batches" --candidates "${CANDIDATES:-0}" \
        --families sparse24_tc,igemm_tc --db "$db" --out "$out/bench-$batches" > "$out/bench-$batches.log" 2>&1 ||
        status=1
      grep -h -E "^Geometric|^Network total" "$out/bench-$batches"/*.md
      ;;
    *)
      echo "unknown part '$part', expected verify, tune-n8, tune-n32 or bench" >&2
      exit 2
      ;;
  esac
done
exit $status
