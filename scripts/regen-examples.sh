#!/bin/sh
# regen-examples: regenerates the checked-in example libraries (a host test diffs them with a fresh emit):
#   generated/cusnn_sm90         the cusnn suite on sm_90, convgen's default choices
#   generated/weight_twins_sm90  two layers of one shape with pruned filters of their own (examples/weight_twins:
#                                emit-lib --weights), each baked into its kernel; the library tells them apart
#   generated/relu_on_load_sm90  three layers that take their input before its ReLU (examples/relu_on_load): one
#                                kernel applies max(0, x) as it loads, two run behind the ReLU prologue
#   generated/tensor_maps_sm90   four layers whose kernels on the H200 read their operands through TMA tensor maps
#                                passed by value (examples/tensor_maps)
#
#   scripts/regen-examples.sh [OUT]     OUT defaults to generated/; $CONVGEN names the convgen binary
#                                       (default build/tools/convgen/convgen)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
convgen=${CONVGEN:-$root/build/tools/convgen/convgen}
out=${1:-$root/generated}
# Emit into fresh folders so no file of an older emit lingers.
rm -rf "$out/cusnn_sm90" "$out/weight_twins_sm90" "$out/relu_on_load_sm90" "$out/tensor_maps_sm90"
"$convgen" emit-lib --shapes "$root/shapes/cusnn.csv" --gpu h100_sxm --name cusnn_sm90 --out "$out/cusnn_sm90"
"$convgen" emit-lib --shapes "$root/examples/weight_twins/weight_twins.csv" --gpu h100_sxm --name weight_twins_sm90 \
  --weights "$root/examples/weight_twins" --out "$out/weight_twins_sm90"
"$convgen" emit-lib --shapes "$root/examples/relu_on_load/relu_on_load.csv" --gpu h100_sxm --name relu_on_load_sm90 \
  --out "$out/relu_on_load_sm90"
"$convgen" emit-lib --shapes "$root/examples/tensor_maps/tensor_maps.csv" --gpu h200 --name tensor_maps_sm90 \
  --out "$out/tensor_maps_sm90"
