#!/usr/bin/env bash
# profile-layer: on a GPU machine (build/ carried, scripts/pack-build.sh): every candidate of one layer measured
# (`convgen tune --budget 0`), the measurements listed, and Nsight Compute's profile of the fastest kernel and of the
# kernels named in KERNELS (space-separated), each launched by `convgen run`: OUT/ncu-LAYER-nBATCH-KERNEL.ncu-rep
# (every section), .txt (its details page), .sass.csv (its source page) and .stalls.md (where the warps wait, by
# scripts/ncu-stalls.py). What to read before guessing why a layer is slow (DESIGN.md's benchmark protocol).
#   Usage: scripts/profile-layer.sh OUT SHAPES LAYER BATCH [tune and run options, e.g. --weight-sparsity 0.9]
#   Environment: FAMILY (only this family's candidates), KERNELS (more kernels to profile), NCU (ncu's path).
set -uo pipefail
out=${1:?usage: scripts/profile-layer.sh OUT SHAPES LAYER BATCH [options...]}
shapes=${2:?shapes file}
layer=${3:?layer name}
batch=${4:?batch}
shift 4
mkdir -p "$out"
cd "$(dirname "$0")/.."
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=${CONVGEN_CACHE_DIR:-/tmp/convgen-cache}
convgen=build/tools/convgen/convgen
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
db="$out/tuning-$layer-n$batch.sqlite"
rm -f "$db"

family=()
[[ -n ${FAMILY:-} ]] && family=(--family "$FAMILY")
"$convgen" tune --shapes "$shapes" --layer "$layer" --batch "$batch" --budget 0 --db "$db" "${family[@]}" "$@" \
  > "$out/tune-$layer-n$batch.log" 2>&1
"$convgen" db show --db "$db" > "$out/candidates-$layer-n$batch.txt" 2>&1
best=$("$convgen" db list --db "$db" 2>/dev/null | awk '$NF == "us" { print $(NF - 2); exit }')
echo "fastest: ${best:-none}"

for kernel in $best ${KERNELS:-}; do
  # The first launch of the kernel's main entry (setup entries end in their suffix), every section (`--set full`:
  # throughput, memory, issue stalls, occupancy, launch shape, source counters), kept as a report that
  # `ncu --import` opens on any machine with Nsight Compute (its source page: where the issue slots and stalls go),
  # and printed as the details page.
  report="$out/ncu-$layer-n$batch-$kernel"
  "$ncu" --kernel-name-base function -k "regex:^${kernel}\$" -c 1 --set full -o "$report" -f \
    "$convgen" run --shapes "$shapes" --layer "$layer" --batch "$batch" --kernel "$kernel" "$@" \
    > "$report.log" 2>&1
  "$ncu" --import "$report.ncu-rep" --page details > "$report.txt" 2>&1
  # Its source page (SASS with the warp stall samples of each instruction) and where the warps wait, summarized.
  "$ncu" --import "$report.ncu-rep" --page source --csv --print-source sass > "$report.sass.csv" 2>&1
  python3 scripts/ncu-stalls.py "$report.sass.csv" > "$report.stalls.md" 2>&1
  grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Block Size|Grid Size|Warp Cycles Per Issued" \
    "$report.txt" | sed "s/^/$kernel: /"
done
