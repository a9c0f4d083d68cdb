#!/usr/bin/env bash
# torch_models_lanes: bench/torch_models.py for several (model, batch, precision) at once, one lane per GPU. Lane i
# runs on GPU i alone (CUDA_VISIBLE_DEVICES) and on the i-th equal slice of the cores (taskset: inductor's compile
# workers and convgen's compile pool both size themselves to it), from cold caches of its own (convgen's JIT cache
# and database, inductor's and Triton's caches), into OUT/lane-I; then one report of every lane in OUT
# (torch_models.py --merge). LANE_TIMEOUT (seconds, default none) ends each lane's python with SIGTERM: a lane cut
# short keeps its rows, and a max-autotune still tuning is reported with the time it had spent. LANE_CACHES (a
# folder) keeps each lane's caches in LANE_CACHES/lane-I instead, emptied at the start; with RESUME=1 they are kept
# and each lane measures eager and max-autotune only (--compile-only), resuming a max-autotune tune that a limit cut
# short: `torch_models.py --merge FIRST_OUT,THIS_OUT` joins the two runs' rows (the tuning times add up).
# Across machines (a later session): SAVE_CACHES=DIR writes each lane's inductor and Triton caches to
# DIR/lane-I-caches.tgz when the lanes end (over 15 MiB, more than a returned file may have: inductor's autotuning
# results alone, its cache/ folder), with their sizes in DIR/lane-I-caches.txt; RESTORE_CACHES=DIR unpacks them into
# LANE_CACHES/lane-I before a RESUME=1 run (carry DIR there).
# Usage: bench/torch_models_lanes.sh OUT LANE [LANE ...] [-- torch_models.py arguments]
#   LANE: MODEL:BATCH:PRECISION, e.g. bench/torch_models_lanes.sh OUT resnet50:1:fp32 resnet50:8:fp16 -- --runs 30
set -euo pipefail
out=${1:?usage: bench/torch_models_lanes.sh OUT LANE [LANE ...] [-- torch_models.py arguments]}
shift
lanes=()
while (($#)) && [[ $1 != -- ]]; do
  [[ $1 =~ ^[a-z0-9_]+:[0-9]+:(fp32|fp16)$ ]] || { echo "torch_models_lanes: lane '$1': expected MODEL:BATCH:fp32|fp16" >&2; exit 2; }
  lanes+=("$1"); shift
done
[[ ${1:-} == -- ]] && shift
((${#lanes[@]})) || { echo "torch_models_lanes: no lane given" >&2; exit 2; }
gpus=$(nvidia-smi -L | grep -c '^GPU ')
((${#lanes[@]} <= gpus)) || { echo "torch_models_lanes: ${#lanes[@]} lanes for $gpus GPUs" >&2; exit 2; }
cores=($(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r lo hi; do seq "$lo" "${hi:-$lo}"; done))
per_lane=$((${#cores[@]} / ${#lanes[@]}))
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
pids=() folders=()
for i in "${!lanes[@]}"; do
  IFS=: read -r model batch precision <<< "${lanes[$i]}"
  lane=$out/lane-$i && rm -rf "$lane" && mkdir -p "$lane"
  caches=$lane
  if [[ -n ${LANE_CACHES:-} ]]; then
    caches=$LANE_CACHES/lane-$i
    [[ -n ${RESUME:-} ]] || rm -rf "$caches"
    mkdir -p "$caches"
  fi
  if [[ -n ${RESTORE_CACHES:-} && -f $RESTORE_CACHES/lane-$i-caches.tgz ]]; then
    tar -C "$caches" -xzf "$RESTORE_CACHES/lane-$i-caches.tgz"
    echo "lane $i: caches restored from $RESTORE_CACHES/lane-$i-caches.tgz"
  fi
  resume=()
  [[ -n ${RESUME:-} ]] && resume=(--compile-only)
  mine=$(IFS=,; echo "${cores[*]:$((i * per_lane)):$per_lane}")
  echo "lane $i: $model batch $batch $precision on GPU $i, cores $mine"
  limit=()
  [[ -n ${LANE_TIMEOUT:-} ]] && limit=(timeout "$LANE_TIMEOUT")
  (cd "$here" && CUDA_VISIBLE_DEVICES=$i CONVGEN_CACHE_DIR=$caches/jit TORCHINDUCTOR_CACHE_DIR=$caches/inductor \
     TRITON_CACHE_DIR=$caches/triton "${limit[@]}" taskset -c "$mine" python3 bench/torch_models.py --models "$model" \
     --batch "$batch" --precision "$precision" --database "$lane/tuning.sqlite" --out "$lane" "${resume[@]}" "$@" \
     > "$lane/log.txt" 2>&1 && status=0 || status=$?; echo "lane $i exited with $status" >> "$lane/log.txt") &
  pids+=($!) folders+=("$lane")
done
wait "${pids[@]}" || true  # a lane's own status is in its log
if [[ -n ${SAVE_CACHES:-} ]]; then
  mkdir -p "$SAVE_CACHES"
  for i in "${!lanes[@]}"; do
    caches=$out/lane-$i
    [[ -n ${LANE_CACHES:-} ]] && caches=$LANE_CACHES/lane-$i
    present=()
    for d in inductor triton; do [[ -d $caches/$d ]] && present+=("$d"); done
    ((${#present[@]})) || continue
    du -sk "$caches"/inductor/* "$caches"/triton 2>/dev/null | sort -rn > "$SAVE_CACHES/lane-$i-caches.txt" || true
    tar -C "$caches" -czf "$SAVE_CACHES/lane-$i-caches.tgz" "${present[@]}"
    if (($(stat -c %s "$SAVE_CACHES/lane-$i-caches.tgz") > 15 * 1024 * 1024)) && [[ -d $caches/inductor/cache ]]; then
      # Too big to come back (a DenseNet-121 fp16 tune left 79 MB, the compiled kernels of every choice): only the
      # autotuning results (inductor's cache/: each choice's measured time), so that a resumed max-autotune
      # benchmarks nothing it already measured and compiles only what it picks.
      tar -C "$caches" -czf "$SAVE_CACHES/lane-$i-caches.tgz" inductor/cache
      echo "lane $i: the caches are too big to return: inductor's autotuning results alone saved"
    fi
    echo "lane $i: caches saved, $(du -h "$SAVE_CACHES/lane-$i-caches.tgz" | cut -f1)"
  done
fi
tail -n 3 "$out"/lane-*/log.txt
present=()
for f in "${folders[@]}"; do [[ -f $f/torch_models.json ]] && present+=("$f"); done
((${#present[@]})) || { echo "torch_models_lanes: no lane wrote a report" >&2; exit 1; }
(cd "$here" && python3 bench/torch_models.py --merge "$(IFS=,; echo "${present[*]}")" --out "$out")
cat "$out/torch_models.md"
