#!/usr/bin/env bash
# cold-start: issue 16's one-GPU figures with the carried build, into OUT: NVRTC compiles per second in threads
# against worker processes on this machine's cores, the JIT cache's hit times, and `convgen tune` of a suite from a
# cold JIT cache (a fresh database and cache folder per run, so every layer is tuned and every kernel compiled).
# Usage: scripts/cold-start.sh OUT STEP...   (steps run in the order given; each appends its wall time to times.txt)
#   throughput    convgen-compile-throughput at 1 and $(nproc) compiles at once, threads against processes
#   hits          convgen-cache-latency (memory and disk hits)
#   cold          tune SUITE at BATCHES with --budget BUDGET: worker processes and the next layer prefetched
#   warm          the same again on cold's JIT cache (a fresh database)
#   serial        cold with compiles in the process's threads and no prefetch (CONVGEN_NVRTC_WORKER=none,
#                 --serial-compile): how convgen tuned before both
#   everything    cold with every candidate compiled (--compile 0), as convgen tuned before the compile limit;
#                 cold-vs-everything.txt: each problem's best time under the limit against this run's
#   fast          cold with CONVGEN_NVRTC_OPTIONS=$FAST_OPTIONS; fast-vs-cold.txt: each problem's best time
#                 against cold's (the kernels' speed when NVRTC optimizes less)
#   default       tune SUITE as a user would first run it: the file's batch, default budget
# Environment: SUITE (shapes/resnet50.csv), BATCHES (1,8), BUDGET (4), FAST_OPTIONS (--Ofast-compile=mid).
set -uo pipefail
out=${1:?usage: scripts/cold-start.sh OUT STEP...}
shift
cd "$(dirname "$0")/.."
mkdir -p "$out"
suite=${SUITE:-shapes/resnet50.csv}
batches=${BATCHES:-1,8}
budget=${BUDGET:-4}
convgen=build/tools/convgen/convgen
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
timed() {  # timed NAME COMMAND...: its output in OUT/NAME.log, its wall time appended to OUT/times.txt
  local name=$1 start end status
  shift
  start=$(date +%s%N)
  "$@" > "$out/$name.log" 2>&1
  status=$?
  end=$(date +%s%N)
  printf '%-12s %8.1f s  exit %d\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN{print (b-a)/1e9}')" "$status" |
    tee -a "$out/times.txt"
}
best() { "$convgen" db list --db "$1" | awk '/^  /{print $1, $2, $3}' | sort; }  # problem kernel µs
compare() {  # compare A B NAME: per problem, A's kernel and µs, B's kernel and µs, B ÷ A; the geometric mean last
  join <(best "$1") <(best "$2") |
    awk '{r = $5 / $3; s += log(r); n++; print $0, r} END {if (n) printf "geomean %.3f over %d\n", exp(s / n), n}' \
      > "$out/$3.txt"
  echo "$3: $(tail -1 "$out/$3.txt")" | tee -a "$out/times.txt"
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; } > "$out/environment.txt"
tune=("$convgen" tune --shapes "$suite" --batch "$batches" --budget "$budget")
for step in "$@"; do
  case $step in
    throughput)
      timed throughput build/tools/convgen/convgen-compile-throughput --shapes "$suite" --concurrency "1,$(nproc)" ;;
    hits) timed hits build/tools/convgen/convgen-cache-latency --shapes "$suite" --folder "$scratch/hits" ;;
    cold) CONVGEN_CACHE_DIR=$scratch/cold timed cold "${tune[@]}" --db "$out/cold.sqlite" ;;
    warm) CONVGEN_CACHE_DIR=$scratch/cold timed warm "${tune[@]}" --db "$scratch/warm.sqlite" ;;
    serial)
      CONVGEN_NVRTC_WORKER=none CONVGEN_CACHE_DIR=$scratch/serial timed serial "${tune[@]}" --serial-compile \
        --db "$out/serial.sqlite" ;;
    fast)
      CONVGEN_NVRTC_OPTIONS=${FAST_OPTIONS:---Ofast-compile=mid} CONVGEN_CACHE_DIR=$scratch/fast timed fast "${tune[@]}" \
        --db "$out/fast.sqlite"
      [[ -f $out/cold.sqlite ]] && compare "$out/cold.sqlite" "$out/fast.sqlite" fast-vs-cold ;;
    everything)
      CONVGEN_CACHE_DIR=$scratch/everything timed everything "${tune[@]}" --compile 0 --db "$out/everything.sqlite"
      [[ -f $out/cold.sqlite ]] && compare "$out/everything.sqlite" "$out/cold.sqlite" cold-vs-everything ;;
    default) CONVGEN_CACHE_DIR=$scratch/default timed default "$convgen" tune --shapes "$suite" --db "$out/default.sqlite" ;;
    *) echo "cold-start: unknown step '$step'" >&2; exit 2 ;;
  esac
done
