#!/bin/sh
# regen-examples: regenerates generated/cusnn_sm90, the checked-in example library (a host test diffs it with a fresh emit).
#
#   scripts/regen-examples.sh [OUT]     OUT defaults to generated/cusnn_sm90; $CONVGEN names the convgen binary
#                                       (default build/tools/convgen/convgen)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
convgen=${CONVGEN:-$root/build/tools/convgen/convgen}
out=${1:-$root/generated/cusnn_sm90}
# Emit into a fresh folder so no file of an older emit lingers.
rm -rf "$out"
"$convgen" emit-lib --shapes "$root/shapes/cusnn.csv" --gpu h100_sxm --name cusnn_sm90 --out "$out"
