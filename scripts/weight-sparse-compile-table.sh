#!/usr/bin/env bash
# weight-sparse-compile-table: NVRTC cost of baking pruned filters: `convgen generate` with --weight-sparsity on a
# suite (no GPU needed), then a Markdown table per layer of the kernel chosen, its source and cubin bytes and its
# compile time, from the manifest. Usage: scripts/weight-sparse-compile-table.sh SUITE SPARSITY OUT [generate args]
set -euo pipefail
suite=${1:?usage: SUITE SPARSITY OUT [generate args...]}
sparsity=${2:?}
out=${3:?}
shift 3
convgen=${CONVGEN:-build/tools/convgen/convgen}
rm -rf "$out"
"$convgen" generate --no-cache --shapes "$suite" --weight-sparsity "$sparsity" --out "$out" "$@" > "$out.log" 2>&1
python3 - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "manifest.json")))
rows, times = [], []
for k in m["kernels"]:
    src = os.path.getsize(os.path.join(out, k["source"]))
    cubin = os.path.getsize(os.path.join(out, k["cubin"]))
    rows.append(f"| {k['layer']} | {k['description']} | {k['kernel']} | {src / 1024:.0f} | {cubin / 1024:.0f} | "
                f"{k['registers']} | {k['spill_store_bytes']} | {k['compile_ms'] / 1000:.2f} |")
    if k["family"] == "weight_sparse":
        times.append(k["compile_ms"] / 1000)
print(f"# NVRTC cost of baked filters: {m.get('suite', '')} on {m.get('gpu', '')} ({m.get('arch', '')})\n")
print("| layer | shape | kernel | source KiB | cubin KiB | registers | spill B | compile s |")
print("|---|---|---|--:|--:|--:|--:|--:|")
print("\n".join(rows))
if times:
    print(f"\nweight_sparse layers: {len(times)}; compile time median {statistics.median(times):.2f} s, "
          f"worst {max(times):.2f} s (wall time of each compile; parallel jobs share the machine's cores).")
PY
