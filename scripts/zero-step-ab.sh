#!/usr/bin/env bash
# zero-step-ab.sh OUT DB [LAYER] [BATCH] [SPARSITY]: a plan's zero step as a memset node (CONVGEN_ZERO_STEP=memset)
# against the zero pass (the default), on cuSNN's LAYER (default dense_128to32_7) at BATCH (1) with SPARSITY zeros
# (0.9, blob), our side the defaults and DB's best: each way beside cuDNN's routes (the full bench) and alone
# (--ours-only), then cuSNN's whole suite at that batch and sparsity each way. Reports under OUT/<way>-<run>/, a log
# per run in OUT/. Run from the repository root with a built (or carried) build/.
set -uo pipefail
out=${1:?usage: zero-step-ab.sh OUT DB [LAYER] [BATCH] [SPARSITY]}
db=${2:?usage: zero-step-ab.sh OUT DB [LAYER] [BATCH] [SPARSITY]}
layer=${3:-dense_128to32_7}
batch=${4:-1}
sparsity=${5:-0.9}
cv=build/tools/convgen/convgen
mkdir -p "$out"
common=(--shapes shapes/cusnn.csv --batch "$batch" --act-sparsity "$sparsity" --db "$db" --candidates 0)
for way in memset kernel; do
  for run in full ours-only; do
    extra=()
    [[ $run == ours-only ]] && extra=(--ours-only)
    echo "== $(date -u +%T) $way $run $layer" | tee -a "$out/runs.log"
    CONVGEN_ZERO_STEP=$way timeout 150 "$cv" bench "${common[@]}" --layer "$layer" "${extra[@]}" \
      --out "$out/$way-$run-$layer" > "$out/$way-$run-$layer.log" 2>&1
    echo "   rc $?" | tee -a "$out/runs.log"
  done
done
for way in kernel memset; do
  echo "== $(date -u +%T) $way full cusnn" | tee -a "$out/runs.log"
  CONVGEN_ZERO_STEP=$way timeout 240 "$cv" bench "${common[@]}" --finalists 4 --out "$out/$way-full-cusnn" \
    > "$out/$way-full-cusnn.log" 2>&1
  echo "   rc $?" | tee -a "$out/runs.log"
done
