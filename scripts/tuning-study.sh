#!/usr/bin/env bash
# tuning-study: on a GPU machine, with build/ built (or carried as build-carry/), reproduces
# bench/results/<gpu>/tuning-study.md: calibrates the cost model on the calibration measurements (never on the
# study's own problems), then runs `convgen tune-study` on cusnn and resnet50 at batch 1 and 8.
#
#   scripts/tuning-study.sh OUT [PART...]
#     PART: calibrate, cusnn, resnet50-n1, resnet50-n8 (default: all four, in that order; each study part needs the
#           calibration database OUT/study.sqlite that `calibrate` writes)
#           collect: measure new calibration data instead (every candidate of resnet20_cifar and densenet121 at
#           batch 1 and 8, as the published file was made; ~10 min on an H200, cut at CONVGEN_COLLECT_SECONDS)
#           families: SEER's right-pick rate of every family (the cost model's first pick within 10% of the
#           measured best): every candidate of cusnn at batch 1 and 8 measured in each mode a family serves (fp32
#           dense and at 70% blob activation zeros, fp32 with 90% zero weights, tf32, fp16 and fp16 2:4, NHWC for the
#           tensor cores) into OUT/families.sqlite, exported to OUT/families-measurements.json, then
#           `db calibrate --dry-run` on it (OUT/families-calibrate.log; CONVGEN_FAMILY_MODES picks the modes, each
#           cut at CONVGEN_MODE_SECONDS)
#   CONVGEN_CALIBRATION: the measurements to calibrate on (default bench/results/h200/tuning-calibration-measurements.json.gz)
set -euo pipefail
out=${1:?usage: scripts/tuning-study.sh OUT [calibrate|cusnn|resnet50-n1|resnet50-n8|collect|families]...}
shift
parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=(calibrate cusnn resnet50-n1 resnet50-n8)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
db="$out/study.sqlite"
calibration=${CONVGEN_CALIBRATION:-bench/results/h200/tuning-calibration-measurements.json.gz}

for part in "${parts[@]}"; do
  case $part in
    collect)
      timeout "${CONVGEN_COLLECT_SECONDS:-540}" bash -c "
        for suite in resnet20_cifar densenet121; do
          $convgen tune --shapes shapes/\$suite.csv --batch 1,8 --budget 0 --no-graph --force \
            --db '$out/calibration.sqlite' > '$out/collect-'\$suite.log 2>&1
        done" || echo "collect: stopped after ${CONVGEN_COLLECT_SECONDS:-540} s; what was measured is kept"
      "$convgen" db export --db "$out/calibration.sqlite" --out "$out/calibration-measurements.json"
      ;;
    families)
      fdb="$out/families.sqlite"
      declare -A mode_args=(
        [fp32]="--precision fp32"
        [fp32-act70]="--precision fp32 --act-sparsity 0.7 --sparsity-pattern blob"
        [fp32-w90]="--precision fp32 --weight-sparsity 0.9"
        [tf32]="--precision tf32 --layout nhwc"
        [fp16]="--precision fp16 --layout nhwc"
        [fp16-24]="--precision fp16 --layout nhwc --weight-sparsity 2:4")
      for mode in ${CONVGEN_FAMILY_MODES:-fp32 fp32-act70 fp32-w90 tf32 fp16 fp16-24}; do
        [[ -n ${mode_args[$mode]:-} ]] || { echo "tuning-study: unknown mode '$mode'" >&2; exit 2; }
        # shellcheck disable=SC2086
        timeout "${CONVGEN_MODE_SECONDS:-300}" "$convgen" tune --shapes shapes/cusnn.csv --batch 1,8 --budget 0 \
          --no-graph --force ${mode_args[$mode]} --db "$fdb" > "$out/families-$mode.log" 2>&1 ||
          echo "families: $mode stopped (exit $?); what was measured is kept" | tee -a "$out/families-$mode.log"
      done
      "$convgen" db export --db "$fdb" --out "$out/families-measurements.json"
      # fp32-w90's filters made again (seed 1, as tune made them): weight_sparse's features count their nonzeros.
      "$convgen" db calibrate --db "$fdb" --dry-run --weight-sparsity 0.9 --seed 1 | tee "$out/families-calibrate.log"
      ;;
    calibrate)
      rm -f "$db" "$db-wal" "$db-shm"
      tmp=$(mktemp)
      gunzip -c "$calibration" > "$tmp"
      "$convgen" db import --db "$db" "$tmp"
      rm -f "$tmp"
      # The study's own problems are left out, so the model is judged on layers it was not fitted to.
      "$convgen" db calibrate --db "$db" --exclude-shapes shapes/cusnn.csv --exclude-shapes shapes/resnet50.csv \
        --exclude-batch 1,8 --samples-csv "$out/calibration-samples.csv" | tee "$out/calibrate.log"
      ;;
    cusnn)
      "$convgen" tune-study --db "$db" --record "$out/study-measurements.sqlite" --shapes shapes/cusnn.csv \
        --batch 1,8 --out "$out/study-cusnn.md" > "$out/study-cusnn.log" 2>&1
      ;;
    resnet50-n1 | resnet50-n8)
      batch=${part#resnet50-n}
      "$convgen" tune-study --db "$db" --record "$out/study-measurements.sqlite" --shapes shapes/resnet50.csv \
        --batch "$batch" --out "$out/study-resnet50-n$batch.md" > "$out/study-resnet50-n$batch.log" 2>&1
      ;;
    *)
      echo "tuning-study: unknown part '$part' (calibrate, cusnn, resnet50-n1, resnet50-n8, collect, families)" >&2
      exit 2
      ;;
  esac
done
