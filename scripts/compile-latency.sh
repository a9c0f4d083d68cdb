#!/usr/bin/env bash
# compile-latency: the cold start of issue 16 on this machine: `convgen generate --no-cache` on a suite (no GPU
# needed), then the NVRTC compile time per kernel from the manifest: p50, p90 and worst, per family and over all,
# as Markdown on stdout. With --all the tuner's candidates are compiled too (what a first tune compiles); without it
# the default kernel of each layer (what a first run compiles).
# Usage: scripts/compile-latency.sh SUITE OUT [generate args...]   e.g. scripts/compile-latency.sh shapes/resnet50.csv OUT --jobs 2
set -euo pipefail
suite=${1:?usage: scripts/compile-latency.sh SUITE OUT [generate args...]}
out=${2:?usage: scripts/compile-latency.sh SUITE OUT [generate args...]}
shift 2
convgen=${CONVGEN:-build/tools/convgen/convgen}
rm -rf "$out"
start=$(date +%s.%N)
"$convgen" generate --no-cache --shapes "$suite" --out "$out" "$@" > "$out.log" 2>&1
end=$(date +%s.%N)
python3 - "$out" "$suite" "$start" "$end" "$*" "$(nproc)" <<'PY'
import json, os, statistics, sys
out, suite, args, cores = sys.argv[1], sys.argv[2], sys.argv[5], sys.argv[6]
wall = float(sys.argv[4]) - float(sys.argv[3])
m = json.load(open(os.path.join(out, "manifest.json")))
by_family = {}
for k in m["kernels"]:
    by_family.setdefault(k["family"], []).append(k["compile_ms"])
every = [t for times in by_family.values() for t in times]

def quantile(times, q):
    s = sorted(times)
    return s[min(len(s) - 1, int(q * len(s)))]

print(f"# NVRTC compile time per kernel: {os.path.basename(suite)} for {m['gpu']} ({m['arch']})\n")
print(f"`convgen generate --no-cache --shapes {suite} {args}` on {cores} cores, NVRTC {m['nvrtc']}, "
      f"convgen {m['convgen']} ({m['commit']}): {len(every)} kernels in {wall:.1f} s wall.\n")
print("| family | kernels | p50 ms | p90 ms | worst ms |")
print("|---|--:|--:|--:|--:|")
for family, times in sorted(by_family.items()) + [("all", every)]:
    print(f"| {family} | {len(times)} | {statistics.median(times):.0f} | {quantile(times, 0.9):.0f} | "
          f"{max(times):.0f} |")
PY
