#!/usr/bin/env bash
# bench-act-sparse: the activation-sparsity benchmark of issue 11, in parts that each fit one lent-GPU call.
# Usage (repository root, GPU machine, build carried): scripts/bench-act-sparse.sh OUT PART...
#   cusnn:PATTERN:ZEROS:BATCHES   cusnn at each zero fraction of ZEROS (e.g. 0,0.5) and batch of BATCHES (1,2,4,8),
#                                 zeros in PATTERN (uniform, channel or blob); e.g. cusnn:blob:0,0.5:1,2,4,8
#   relu-on-load:PATTERN:ZEROS:BATCHES   the same with --relu-on-load: the input is the producer's output before its
#                                 ReLU, which our kernels apply as they load it and cuDNN's routes as a pass first
#   tune:PATTERN:ZEROS:BATCHES    every act_sparse candidate of the cusnn layers measured on PATTERN zeros at each
#                                 zero fraction and batch, the best kept in the tuning database $DB (required)
#   tune-relu-on-load:PATTERN:ZEROS:BATCHES   the same for the layers taking their input before its ReLU
#                                 (--relu-on-load: relu1 candidates), into the same $DB; then relu-on-load:... and
#                                 cusnn:... with DB set compare the tuned relu1 and relu0 kernels
#   tune-families-relu-on-load:PATTERN:ZEROS:BATCHES   the tuner's own search over every family (its default budget,
#                                 or $BUDGET candidates measured a layer) for the layers taking their input before
#                                 its ReLU, into $DB: relu1 kernels against every kernel behind the ReLU prologue
#   network-resnet50  resnet50, batch 1 and 8: dense, then each layer's act_sparsity from the shapes file
#   network-resnet50-n1, network-resnet50-n8, network-densenet121-n1, network-densenet121-n8   one batch per part
# Each part writes OUT/<part>/ (reports and a log); the network parts also OUT/<part>/network_n<batch>.md
# (bench/network_table.py: cuDNN dense, ours dense, ours sparse, time and energy).
# BENCH_OPTIONS (words) are added to every bench, e.g. BENCH_OPTIONS="--finalists 4".
# With DB set, every bench also measures the database's tuned choice of each layer (`convgen bench --db`).
set -uo pipefail
out=${1:?usage: scripts/bench-act-sparse.sh OUT PART...}
shift
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
status=0
db=()
[[ -n ${DB:-} ]] && db=(--db "$DB")

bench() {  # bench PART ARGS...: one convgen bench run into OUT/PART
  local part=$1 extra=()
  shift
  [[ -n ${BENCH_OPTIONS:-} ]] && read -ra extra <<< "$BENCH_OPTIONS"
  mkdir -p "$out/$part"
  echo "== $(date -u +%FT%TZ) convgen bench $* ${extra[*]}" >> "$out/$part/bench.log"
  "$convgen" bench "$@" "${extra[@]}" "${db[@]}" --out "$out/$part" >> "$out/$part/bench.log" 2>&1 || status=1
}

network() {  # network PART SUITE BATCH: dense and file-sparsity runs, then the whole-network table
  local part=$1 suite=$2 batch=$3
  bench "$part" --shapes "shapes/$suite.csv" --batch "$batch" --act-sparsity 0
  bench "$part" --shapes "shapes/$suite.csv" --batch "$batch"
  python3 bench/network_table.py "$out/$part/${suite}_fp32_n${batch}_z0_blob.json" \
    "$out/$part/${suite}_fp32_n${batch}_zfile_blob.json" > "$out/$part/network_n$batch.md" || status=1
}

for part in "$@"; do
  case $part in
    tune:*:*:*)
      IFS=: read -r _ pattern zeros batches <<< "$part"
      [[ -n ${DB:-} ]] || { echo "bench-act-sparse: $part needs DB (the tuning database to write)" >&2; exit 2; }
      mkdir -p "$out/tune-$pattern"
      for z in ${zeros//,/ }; do
        echo "== $(date -u +%FT%TZ) convgen tune --act-sparsity $z" >> "$out/tune-$pattern/tune.log"
        "$convgen" tune --shapes shapes/cusnn.csv --batch "$batches" --act-sparsity "$z" --sparsity-pattern "$pattern" \
          --family act_sparse --budget 0 --db "$DB" >> "$out/tune-$pattern/tune.log" 2>&1 || status=1
      done
      "$convgen" db show --db "$DB" > "$out/tune-$pattern/measurements.txt" 2>&1 || status=1 ;;
    tune-relu-on-load:*:*:*)
      IFS=: read -r _ pattern zeros batches <<< "$part"
      [[ -n ${DB:-} ]] || { echo "bench-act-sparse: $part needs DB (the tuning database to write)" >&2; exit 2; }
      mkdir -p "$out/tune-relu-on-load-$pattern"
      for z in ${zeros//,/ }; do
        echo "== $(date -u +%FT%TZ) convgen tune --act-sparsity $z --relu-on-load" >> "$out/tune-relu-on-load-$pattern/tune.log"
        "$convgen" tune --shapes shapes/cusnn.csv --batch "$batches" --act-sparsity "$z" --sparsity-pattern "$pattern" \
          --relu-on-load --family act_sparse --budget 0 --db "$DB" >> "$out/tune-relu-on-load-$pattern/tune.log" 2>&1 || status=1
      done ;;
    tune-families-relu-on-load:*:*:*)
      IFS=: read -r _ pattern zeros batches <<< "$part"
      [[ -n ${DB:-} ]] || { echo "bench-act-sparse: $part needs DB (the tuning database to write)" >&2; exit 2; }
      mkdir -p "$out/tune-families-relu-on-load-$pattern"
      for z in ${zeros//,/ }; do
        echo "== $(date -u +%FT%TZ) convgen tune --act-sparsity $z --relu-on-load" \
          >> "$out/tune-families-relu-on-load-$pattern/tune.log"
        "$convgen" tune --shapes shapes/cusnn.csv --batch "$batches" --act-sparsity "$z" --sparsity-pattern "$pattern" \
          --relu-on-load ${BUDGET:+--budget "$BUDGET"} --db "$DB" \
          >> "$out/tune-families-relu-on-load-$pattern/tune.log" 2>&1 || status=1
      done ;;
    cusnn:*:*:*)
      IFS=: read -r _ pattern zeros batches <<< "$part"
      bench "cusnn-$pattern" --shapes shapes/cusnn.csv --batch "$batches" --act-sparsity "$zeros" --sparsity-pattern "$pattern" ;;
    relu-on-load:*:*:*)
      IFS=: read -r _ pattern zeros batches <<< "$part"
      bench "cusnn-relu-on-load-$pattern" --shapes shapes/cusnn.csv --batch "$batches" --act-sparsity "$zeros" \
        --sparsity-pattern "$pattern" --relu-on-load ;;
    network-resnet50) network "$part" resnet50 1; network "$part" resnet50 8 ;;
    network-resnet50-n1) network "$part" resnet50 1 ;;
    network-resnet50-n8) network "$part" resnet50 8 ;;
    network-densenet121-n1) network "$part" densenet121 1 ;;
    network-densenet121-n8) network "$part" densenet121 8 ;;
    *) echo "bench-act-sparse: unknown part '$part'" >&2; status=1 ;;
  esac
  echo "$part done at $(date -u +%FT%TZ), status $status"
done
exit $status
