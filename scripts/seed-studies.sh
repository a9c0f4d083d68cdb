#!/usr/bin/env bash
# seed-studies: on a GPU machine, with build/ built (or carried as build-carry/), the seeds' studies of issue 15 that
# still need a GPU, each PART sized for one lent call (600 s), writing under OUT:
#   resnet20      ResNet-20 layer by layer at batch 1, 8, 32 and 128 against every cuDNN route (resnet20/), with
#                 bench/profile_table.py's time per layer and share of the total (resnet20/profile.md)
#   fold-fp16-taipei, fold-fp16-roundabout
#                 FoldedCNNs in fp16 (NHWC) for one NoScope model, unfolded and folded both ways (fold-fp16-<model>/):
#                 one call each (taipei's unfolded bench alone passed 210 s on the H200); fold-fp16 runs both
#   fold-fp16-noscope
#                 the same for both NoScope models, the six runs spread over the machine's GPUs, one run a GPU at a
#                 time (fold-fp16-noscope/: each run's folder, then bench/, analysis/, shapes/ and fold.md of all
#                 six); about 8 minutes on two H200s
#   fold-taipei   NoScope taipei unfolded and folded exactly in fp32, so that the fold's gain is of one GPU
#                 (fold-taipei/)
#   stress        `convgen stress --count 2000` over every precision (fp32, tf32, fp16, bf16), so the tensor-core
#                 families' defaults are in it too (stress/)
#   families      SEER's right-pick rate of every family (scripts/tuning-study.sh OUT families)
# The pictures (`convgen plot`) and bench/fold_table.py's table are drawn afterwards wherever matplotlib is.
# Usage: scripts/seed-studies.sh OUT PART...
set -uo pipefail
out=${1:?usage: scripts/seed-studies.sh OUT PART...}
shift
[[ $# -gt 0 ]] || {
  echo "seed-studies: name a part: resnet20 fold-fp16 fold-fp16-taipei fold-fp16-roundabout fold-fp16-noscope" \
    "fold-taipei stress families" >&2
  exit 2
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > "$out/environment.txt" 2>&1
# fold_fp16_noscope DIR: the six fp16 FoldedCNNs runs of the NoScope models in lanes, one lane a GPU (the longest
# runs first, dealt in turn), then their reports together and bench/fold_table.py's table.
fold_fp16_noscope() {
  local dir=$1 gpus lane job
  mkdir -p "$dir"/{bench,analysis,shapes}
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  ((gpus > 0)) || gpus=1
  local jobs=(noscope_taipei:none noscope_taipei:seed noscope_roundabout:none noscope_taipei:exact
              noscope_roundabout:seed noscope_roundabout:exact)
  for ((lane = 0; lane < gpus; ++lane)); do
    (
      for ((j = lane; j < ${#jobs[@]}; j += gpus)); do
        job=${jobs[j]}
        CUDA_VISIBLE_DEVICES=$lane CONVGEN_CACHE_DIR=$CONVGEN_CACHE_DIR-$lane SUITES=${job%:*} PRECISIONS=fp16 \
          FOLDS=${job#*:} scripts/fold-study.sh "$dir/${job/:/-}" > "$dir/${job/:/-}.log" 2>&1 || {
          echo "seed-studies: ${job/:/ } failed (its log: $dir/${job/:/-}.log)" >&2
          touch "$dir/${job/:/-}.failed"
        }
      done
    ) &
  done
  wait
  for job in "${jobs[@]}"; do
    for sub in bench analysis shapes; do cp "$dir/${job/:/-}/$sub"/* "$dir/$sub/" 2> /dev/null; done
  done
  python3 bench/fold_table.py "$dir"/bench/*.json --analysis "$dir/analysis" > "$dir/fold.md" &&
    ! compgen -G "$dir/*.failed" > /dev/null
}

for part in "$@"; do
  case $part in
    resnet20)
      mkdir -p "$out/resnet20"
      "$convgen" bench --shapes shapes/resnet20_cifar.csv --batch 1,8,32,128 --out "$out/resnet20" \
        > "$out/resnet20/bench.log" 2>&1 || status=1
      python3 bench/profile_table.py "$out"/resnet20/*.json > "$out/resnet20/profile.md" || status=1
      ;;
    fold-fp16 | fold-fp16-taipei | fold-fp16-roundabout)
      models="noscope_taipei noscope_roundabout"
      [[ $part == fold-fp16-* ]] && models="noscope_${part#fold-fp16-}"
      for model in $models; do
        SUITES=$model PRECISIONS=fp16 scripts/fold-study.sh "$out/fold-fp16-${model#noscope_}" > /dev/null || status=1
      done
      ;;
    fold-fp16-noscope)
      fold_fp16_noscope "$out/fold-fp16-noscope" || status=1
      ;;
    fold-taipei)
      SUITES=noscope_taipei PRECISIONS=fp32 FOLDS="none exact" scripts/fold-study.sh "$out/fold-taipei" > /dev/null ||
        status=1
      ;;
    stress)
      mkdir -p "$out/stress"
      "$convgen" stress --count 2000 --seed 1 --precision all --out "$out/stress/stress-2000-all.json" \
        > "$out/stress/stress-2000-all.md" 2> "$out/stress/stress-2000-all.log" || status=1
      ;;
    families)
      scripts/tuning-study.sh "$out" families || status=1
      ;;
    *)
      echo "seed-studies: unknown part '$part' (resnet20, fold-fp16, fold-fp16-taipei, fold-fp16-roundabout," \
        "fold-fp16-noscope, fold-taipei, stress, families)" >&2
      exit 2
      ;;
  esac
done
exit $status
