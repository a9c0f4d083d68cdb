#!/usr/bin/env python3
"""Usage: split_ab.py REPORT.json.gz ... (`convgen bench --ours-only --families winograd_gemm` reports, .json or .json.gz).
Per layer and batch, in the same run: the fastest winograd_gemm kernel without a split (sk1) and the fastest with one
(sk2, sk4), each the graph-replay median of a verified kernel; then the geometric mean of best-overall / best-unsplit
per batch (1.0 where no split won or none was offered)."""
import gzip, json, math, re, sys


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')


rows = []
for path in sys.argv[1:]:
    for r in json.load(gzip.open(path) if path.endswith(".gz") else open(path))['rows']:
        best = {}
        for c in r['our_candidates']:
            if c.get('status') != 'ok':
                continue
            split = int(re.search(r'_sk(\d+)', c['kernel']).group(1)) if '_sk' in c['kernel'] else 1
            t = c.get('graph_median_us') or c['median_us']
            key = 'split' if split > 1 else 'plain'
            if key not in best or t < best[key][0]:
                best[key] = (t, c['kernel'])
        rows.append((r['batch'], r['layer'], best))
print('| batch | layer | fastest unsplit µs | fastest split µs | its kernel | best ÷ best unsplit |')
print('|--:|---|--:|--:|---|--:|')
per_batch = {}
for batch, layer, best in sorted(rows):
    plain, split = best.get('plain'), best.get('split')
    ratio = min(plain[0], split[0]) / plain[0] if plain and split else 1.0
    per_batch.setdefault(batch, []).append(ratio)
    split_us = f"{split[0]:.2f}" if split else "-"
    print(f"| {batch} | {layer} | {plain[0]:.2f} | {split_us} | {split[1] if split else '-'} | {ratio:.3f} |")
print()
for batch, v in sorted(per_batch.items()):
    print(f"batch {batch}: best / best unsplit, geometric mean {gmean(v):.3f} over {len(v)} layers "
          f"(split fastest on {sum(x < 1 for x in v)})")
