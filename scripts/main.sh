#!/usr/bin/env bash
# main: the README's main command: sets up, builds, generates and compiles kernels for a default network and
# GPU descriptor and prints the analysis; where a GPU is present, also runs and verifies every layer on it.
set -euo pipefail
cd "$(dirname "$0")/.."
shapes=${CONVGEN_SHAPES:-shapes/resnet50.csv}
gpu=${CONVGEN_GPU:-h100_sxm}
out=${CONVGEN_OUT:-generated/$(basename "$shapes" .csv)-$gpu}

scripts/setup.sh
scripts/build.sh
convgen=build/tools/convgen/convgen

echo "== generate: $shapes for $gpu into $out"
$convgen generate --shapes "$shapes" --gpu "$gpu" --out "$out"
echo "== analyze"
$convgen analyze --shapes "$shapes" --gpu "$gpu"
if $convgen gpu detect >/dev/null 2>&1; then
  echo "== run: every layer of $shapes on the present GPU, verified against the float64 reference"
  $convgen run --shapes "$shapes" --all-layers
else
  echo "== no CUDA device here: skipping run (generation and analysis need none)"
fi
