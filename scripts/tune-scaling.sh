#!/usr/bin/env bash
# tune-scaling: issue 16's measurements on a machine with two GPUs and the carried build, into OUT:
#   - `convgen tune` of SUITE at BATCHES on one GPU and on all, each from a cold JIT cache and again warm (a fresh
#     database each time: every layer is tuned), wall time in times.txt;
#   - two shards as two processes, one GPU each (as a Slurm array or mpirun would run them), then `db merge`, and
#     the merged best choices against the one-GPU run's (best-choices-differing.txt; same seed and candidates);
#   - then NVRTC compile time per kernel on this machine's cores (scripts/compile-latency.sh), compiles per second
#     with one and with every core busy, in threads of one process against worker processes
#     (convgen-compile-throughput), and the JIT cache's hit times (convgen-cache-latency).
# Usage: scripts/tune-scaling.sh [--tunes-only] OUT [SUITE [BATCHES]]   (default shapes/resnet50.csv 1,8)
#   --tunes-only: the tunes, shards and merge, not the compile and cache figures (about 4 minutes less).
set -uo pipefail
tunes_only=0
[[ ${1:-} == --tunes-only ]] && tunes_only=1 && shift
out=${1:?usage: scripts/tune-scaling.sh [--tunes-only] OUT [SUITE [BATCHES]]}
suite=${2:-shapes/resnet50.csv}
batches=${3:-1,8}
cd "$(dirname "$0")/.."
mkdir -p "$out"
convgen=build/tools/convgen/convgen
scratch=$(mktemp -d)
timed() {  # timed NAME COMMAND...: runs it with its output in OUT/NAME.log, appends its wall time to times.txt
  local name=$1 start end status
  shift
  start=$(date +%s%N)
  "$@" > "$out/$name.log" 2>&1
  status=$?
  end=$(date +%s%N)
  printf '%-16s %8.1f s  exit %d\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN{print (b-a)/1e9}')" "$status" | tee -a "$out/times.txt"
}
nvidia-smi --query-gpu=index,name,driver_version --format=csv > "$out/environment.txt"
nproc >> "$out/environment.txt"

tune=("$convgen" tune --shapes "$suite" --batch "$batches")
CONVGEN_CACHE_DIR=$scratch/cache1 timed one-gpu-cold "${tune[@]}" --gpus 0 --db "$out/one-gpu.sqlite"
CONVGEN_CACHE_DIR=$scratch/cache1 timed one-gpu-warm "${tune[@]}" --gpus 0 --db "$scratch/one-gpu-warm.sqlite"
CONVGEN_CACHE_DIR=$scratch/cache2 timed two-gpus-cold "${tune[@]}" --gpus all --db "$out/two-gpus.sqlite"
CONVGEN_CACHE_DIR=$scratch/cache2 timed two-gpus-warm "${tune[@]}" --gpus all --db "$scratch/two-gpus-warm.sqlite"

# Two shards, two processes, one GPU and one cold cache each (a cluster task's node-local cache).
start=$(date +%s%N)
for shard in 0 1; do
  CUDA_VISIBLE_DEVICES=$shard CONVGEN_CACHE_DIR=$scratch/shard$shard \
    "${tune[@]}" --gpus 0 --shard "$shard/2" --db "$out/shard-{shard}.sqlite" > "$out/shard-$shard.log" 2>&1 &
done
wait
end=$(date +%s%N)
printf '%-16s %8.1f s\n' "two-shards-cold" "$(awk -v a="$start" -v b="$end" 'BEGIN{print (b-a)/1e9}')" | tee -a "$out/times.txt"
"$convgen" db merge "$out/shard-0.sqlite" "$out/shard-1.sqlite" --into "$out/merged.sqlite" > "$out/merge.log" 2>&1
"$convgen" db merge "$out/shard-0.sqlite" "$out/shard-1.sqlite" --into "$out/merged.sqlite" >> "$out/merge.log" 2>&1
best() { "$convgen" db list --db "$1" | awk '/^  /{print $1, $2, $3}' | sort; }  # problem kernel µs
best "$out/one-gpu.sqlite" > "$out/best-one-gpu.txt"
best "$out/merged.sqlite" > "$out/best-merged.txt"
# problem, one GPU's kernel and µs, the merged shards' kernel and µs: where the kernels differ.
join "$out/best-one-gpu.txt" "$out/best-merged.txt" | awk '$2 != $4' > "$out/best-choices-differing.txt"
echo "best choices: $(wc -l < "$out/best-one-gpu.txt") one GPU, $(wc -l < "$out/best-merged.txt") merged," \
  "$(wc -l < "$out/best-choices-differing.txt") with another kernel" | tee -a "$out/times.txt"

# The compile figures last: the tunes above are what a call that runs out of time must not lose.
((tunes_only)) && rm -rf "$scratch" && exit 0
scripts/compile-latency.sh "$suite" "$scratch/cl-defaults" --jobs "$(nproc)" > "$out/compile-latency-defaults.md"
scripts/compile-latency.sh shapes/cusnn.csv "$scratch/cl-cusnn" --jobs "$(nproc)" --all --batch 8 \
  > "$out/compile-latency-cusnn-all.md"
build/tools/convgen/convgen-compile-throughput --shapes "$suite" --concurrency "1,$(nproc)" \
  > "$out/compile-throughput-defaults.md"
build/tools/convgen/convgen-compile-throughput --shapes shapes/cusnn.csv --batch 8 --all --concurrency "$(nproc)" \
  > "$out/compile-throughput-cusnn-all.md"
build/tools/convgen/convgen-cache-latency --shapes "$suite" --folder "$scratch/hits" > "$out/cache-latency.md"

rm -rf "$scratch"
