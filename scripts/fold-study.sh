#!/usr/bin/env bash
# fold-study: the FoldedCNNs seed's study on this GPU (issue 15): each of its models at IMAGES images per pass (1024),
# unfolded and folded by each of FACTORS (4) the seed's way and exactly, benched against every cuDNN route in each of
# PRECISIONS (fp32 fp16; fp16 and bf16 in NHWC, the tensor cores' layout), then bench/fold_table.py's throughput
# table with each network's arithmetic intensity. Usage: scripts/fold-study.sh OUT
# Environment: SUITES (noscope_coral noscope_taipei noscope_roundabout game_scraping), IMAGES, FACTORS, PRECISIONS,
# FOLDS (which of each suite's runs to bench: none, seed, exact; default all three), BENCH_ARGS (more `convgen bench`
# options).
set -uo pipefail
out=${1:?usage: scripts/fold-study.sh OUT}
cd "$(dirname "$0")/.."
convgen=build/tools/convgen/convgen
images=${IMAGES:-1024}
mkdir -p "$out/shapes" "$out/analysis" "$out/bench"
status=0
for suite in ${SUITES:-noscope_coral noscope_taipei noscope_roundabout game_scraping}; do
  cp "shapes/$suite.csv" "$out/shapes/$suite.csv"
  folds=" ${FOLDS:-none seed exact} "
  variants=()
  [[ $folds == *" none "* ]] && variants+=("$suite:$images")
  for f in ${FACTORS:-4}; do
    "$convgen" fold --shapes "shapes/$suite.csv" --batch "$images" --factor "$f" \
      --out "$out/shapes/${suite}_fold$f.csv" 2>> "$out/fold.log" || status=1
    "$convgen" fold --shapes "shapes/$suite.csv" --batch "$images" --factor "$f" --exact \
      --out "$out/shapes/${suite}_xfold$f.csv" 2>> "$out/fold.log" || status=1
    [[ $folds == *" seed "* ]] && variants+=("${suite}_fold$f:$((images / f))")
    [[ $folds == *" exact "* ]] && variants+=("${suite}_xfold$f:$((images / f))")
  done
  for variant in "${variants[@]}"; do
    name=${variant%%:*} batch=${variant##*:}
    "$convgen" analyze --shapes "$out/shapes/$name.csv" --batch "$batch" --json "$out/analysis/${name}_n$batch.json" \
      > /dev/null || status=1
    for precision in ${PRECISIONS:-fp32 fp16}; do
      layout=nchw
      [[ $precision == fp16 || $precision == bf16 ]] && layout=nhwc
      echo "== $name batch $batch $precision" >> "$out/bench.log"
      # shellcheck disable=SC2086
      "$convgen" bench --shapes "$out/shapes/$name.csv" --batch "$batch" --precision "$precision" --layout "$layout" \
        --out "$out/bench" ${BENCH_ARGS:-} >> "$out/bench.log" 2>&1 || status=1
    done
  done
done
python3 bench/fold_table.py "$out"/bench/*.json --analysis "$out/analysis" > "$out/fold.md" || status=1
cat "$out/fold.md"
exit $status
