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
rows, times, sources, cubins = [], [], [], []
for k in m["kernels"]:
    src = os.path.getsize(os.path.join(out, k["source"]))
    cubin = os.path.getsize(os.path.join(out, k["cubin"]))
    seconds = f"{k['compile_ms'] / 1000:.2f}" if k["compile_ms"] > 0 else "cached"  # the same source as a layer before
    rows.append(f"| {k['layer']} | {k['description']} | {k['kernel']} | {src / 1024:.0f} | {cubin / 1024:.0f} | "
                f"{k['registers']} | {k['spill_store_bytes']} | {seconds} |")
    if k["family"] == "weight_sparse" and k["compile_ms"] > 0:
        times.append(k["compile_ms"] / 1000)
        sources.append(src / 1024)
        cubins.append(cubin / 1024)
print(f"# NVRTC cost of baked filters: {m.get('suite', '')} on {m.get('gpu', '')} ({m.get('arch', '')})\n")
print("| layer | shape | kernel | source KiB | cubin KiB | registers | spill B | compile s |")
print("|---|---|---|--:|--:|--:|--:|--:|")
print("\n".join(rows))
if times:
    print(f"\nweight_sparse layers compiled: {len(times)}; compile time median {statistics.median(times):.2f} s, "
          f"worst {max(times):.2f} s (wall time of each compile; parallel jobs share the machine's cores); source "
          f"median {statistics.median(sources):.0f} KiB, largest {max(sources):.0f} KiB; cubin median "
          f"{statistics.median(cubins):.0f} KiB, largest {max(cubins):.0f} KiB.")
PY
