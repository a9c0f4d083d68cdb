#!/usr/bin/env bash
# weight-sparse-study: on a GPU machine, with build/ built (or carried as build-carry/), issue 14's measurements of
# the weight_sparse family on resnet50, in parts that each fit one call of the lent machine (about 600 s):
#
#   scripts/weight-sparse-study.sh OUT PART...
#     verify    the GPU verification of every weight_sparse variant (baked, table, staged table) on the corpus and
#               the cusnn layers at 0-100% zero weights, and with an epilogue (OUT/verify: ctest log and tally)
#     tune-n1   every weight_sparse candidate of resnet50 at 90% zero weights, batch 1, measured
#     tune-n8   the same at batch 8 (`tune --budget 0 --family weight_sparse`, both into OUT/ws.sqlite)
#     bench     resnet50 at 90% zero weights, batch 1 and 8: ours (weight_sparse, the tuned bests joining) against
#               every cuDNN FP32 route and, in the same run, every cuDNN FP16 route (--cudnn-also fp16)
#     curve     resnet50 at 50, 70 and 95% zero weights, batch 1, the same comparison
#     joint     activation and weight sparsity at once on the cusnn layers, batch 1, fp32 (issue 14): 90% zero
#               weights on inputs with 0 and 70% zeros timed with weight_sparse only (OUT/joint/ws), and 70% zeros
#               with act_sparse only, on the 90% filter (OUT/joint/as-w90) and on a dense one (OUT/joint/as-w0);
#               and weight_sparse at 97% zero weights (OUT/joint/ws-w97: the multiply-adds a kernel skipping both
#               would leave, 10% x 30%); cuDNN FP32 in each run on the same inputs
#     profile   conv2_expand (the worst layer, 64->256 1x1 at 56x56) at batch 1: every candidate measured, and Nsight
#               Compute on the fastest and on the best table and staged-table kernels (scripts/profile-layer.sh)
#   Reports go to OUT/<part>/; draw them with `convgen plot`.
set -uo pipefail
out=${1:?usage: scripts/weight-sparse-study.sh OUT PART...}
shift
[[ $# -gt 0 ]] || { echo "name the parts: verify tune-n1 tune-n8 bench curve joint profile" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
db="$out/ws.sqlite"
status=0

for part in "$@"; do
  echo "== $part $(date -u +%FT%TZ)"
  case $part in
    verify)
      mkdir -p "$out/verify"
      CONVGEN_VERIFY_REPORT="$out/verify/verify-summary.txt" ctest --test-dir build -L gpu --output-on-failure \
        -R "GpuVerify.WeightSparseIsCorrectWithPrunedFiltersOfEverySparsity|GpuEpilogueVerify.WeightSparseAppliesTheEpilogueWithItsBakedFilter" \
        > "$out/verify/ctest-gpu.log" 2>&1 || status=1
      tail -3 "$out/verify/ctest-gpu.log"
      ;;
    tune-n1 | tune-n8)
      "$convgen" tune --shapes shapes/resnet50.csv --batch "${part#tune-n}" --weight-sparsity 0.9 --act-sparsity 0 \
        --family weight_sparse --budget 0 --db "$db" > "$out/$part.log" 2>&1 || status=1
      tail -2 "$out/$part.log"
      ;;
    bench)
      "$convgen" bench --shapes shapes/resnet50.csv --batch 1,8 --weight-sparsity 0.9 --act-sparsity 0 \
        --families weight_sparse --db "$db" --cudnn-also fp16 --out "$out/bench" > "$out/bench.log" 2>&1 || status=1
      grep -h -E "^Geometric|^Network total" "$out"/bench/*.md
      ;;
    curve)
      for zeros in 0.5 0.7 0.95; do
        "$convgen" bench --shapes shapes/resnet50.csv --batch 1 --weight-sparsity "$zeros" --act-sparsity 0 \
          --families weight_sparse --cudnn-also fp16 --out "$out/curve-$zeros" > "$out/curve-$zeros.log" 2>&1 ||
          status=1
        grep -h -E "^Geometric" "$out/curve-$zeros"/*.md | sed "s/^/$zeros: /"
      done
      ;;
    joint)
      mkdir -p "$out/joint"
      cusnn=(--shapes shapes/cusnn.csv --batch 1 --candidates 1)
      "$convgen" bench "${cusnn[@]}" --weight-sparsity 0.9 --act-sparsity 0,0.7 --families weight_sparse \
        --out "$out/joint/ws" > "$out/joint/ws.log" 2>&1 || status=1
      "$convgen" bench "${cusnn[@]}" --weight-sparsity 0.9 --act-sparsity 0.7 --families act_sparse \
        --out "$out/joint/as-w90" > "$out/joint/as-w90.log" 2>&1 || status=1
      "$convgen" bench "${cusnn[@]}" --act-sparsity 0.7 --families act_sparse --out "$out/joint/as-w0" \
        > "$out/joint/as-w0.log" 2>&1 || status=1
      "$convgen" bench "${cusnn[@]}" --weight-sparsity 0.97 --act-sparsity 0.7 --families weight_sparse \
        --out "$out/joint/ws-w97" > "$out/joint/ws-w97.log" 2>&1 || status=1
      for run in ws as-w90 as-w0 ws-w97; do grep -h -E "^Geometric" "$out/joint/$run"/*.md | sed "s/^/$run: /"; done
      ;;
    profile)
      FAMILY=weight_sparse KERNELS="${KERNELS:-weight_sparse_p64_kg2_iv0_tb1_pt4_sk1 weight_sparse_p32_kg32_iv0_tb2_pt1_sk1}" \
        scripts/profile-layer.sh "$out/profile" shapes/resnet50.csv conv2_expand 1 --weight-sparsity 0.9 \
        --act-sparsity 0 || status=1
      ;;
    *)
      echo "unknown part '$part', expected verify, tune-n1, tune-n8, bench, curve, joint or profile" >&2
      exit 2
      ;;
  esac
done
exit $status
