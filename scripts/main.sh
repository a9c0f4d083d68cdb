#!/usr/bin/env bash
# main: the README's main command: sets up, builds, generates and compiles kernels for a default network and
# GPU descriptor and prints the analysis; where a GPU is present, also tunes and benchmarks every layer on it.
set -euo pipefail
cd "$(dirname "$0")/.."
shapes=${CONVGEN_SHAPES:-shapes/resnet50.csv}
gpu=${CONVGEN_GPU:-h100_sxm}
out=${CONVGEN_OUT:-generated/$(basename "$shapes" .csv)-$gpu}

scripts/setup.sh
scripts/build.sh convgen  # the tool alone: the tests are scripts/test.sh's
convgen=build/tools/convgen/convgen

echo "== generate: $shapes for $gpu into $out"
$convgen generate --shapes "$shapes" --gpu "$gpu" --out "$out"
echo "== analyze"
$convgen analyze --shapes "$shapes" --gpu "$gpu"
if $convgen gpu detect >/dev/null 2>&1; then
  batch=${CONVGEN_BATCH:-1}
  echo "== tune: every layer of $shapes at batch $batch on the present GPU, into the tuning database"
  $convgen tune --shapes "$shapes" --batch "$batch"
  echo "== bench: against every cuDNN route, verified first (results in bench-results/)"
  $convgen bench --shapes "$shapes" --batch "$batch" --out bench-results
else
  echo "== no CUDA device here: skipping tune and bench (generation and analysis need none)"
fi
